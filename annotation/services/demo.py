"""The demo's clinician studies: a calibration round, a published guide and a target study drawn
from the demo run, part of each pre-filled by the scripted simulated clinician (marked
synthetic), the rest left for the demo annotators to score by hand; and a third study the
simulated clinicians score in full, for calibrating the jury to them.

Every demo annotator is enrolled in the demo project. The target study has a deadline, one
item whose two simulated clinical annotators disagree by 2 points or more on a rubric, sent to
adjudication for the senior demo clinician, and one reservation of a simulated operational
annotator reassigned to the demo annotator `operations` (in its history)."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from accounts.models import Role, Track, User
from annotation.engine.simulated import simulated_clinician
from annotation.models import Assignment, AssignmentStatus, CalibrationGuide, Project, Study
from annotation.services import queue
from annotation.services.adjudication import adjudication_send, study_gaps
from annotation.services.annotations import Draft, annotation_submit
from annotation.services.enrolment import member_enrol
from annotation.services.membership import is_enrolled
from annotation.services.moves import assignment_reassign, study_deadline_set
from annotation.services.studies import StudySpec, panel_versions, study_create
from jury.models import RubricResult, ScoringJob
from jury.services.rubrics import current_versions

DEMO_PROJECT = "Demo project"
GUIDE_FILE = Path(__file__).resolve().parent.parent / "data" / "demo_guide.md"
CALIBRATION_SIZE = 6
TARGET_SIZE = 16
PREFILLED_TARGET_ITEMS = 10
# A third study, scored in full by the simulated clinicians, large enough for the jury's
# calibration page to have something to learn from (its clinicians carry a known bias per
# rubric: annotation/data/simulated_clinician.yaml).
TARGET_STUDY = "Target study"
CALIBRATION_SAMPLE = "Jury calibration sample"
CALIBRATION_SAMPLE_SIZE = 48
MIN_CALIBRATION_SAMPLE = 10  # fewer: cross-fitting would leave each fold almost nothing to learn
DEMO_ANNOTATORS = ("clinician", "operations")  # accounts.services.DEMO_PEOPLE
DEADLINE_DAYS = 14
SIMULATED_PEOPLE = (
    ("simulated-clinical-1", Track.CLINICAL),
    ("simulated-clinical-2", Track.CLINICAL),
    ("simulated-operational-1", Track.OPERATIONAL),
    ("simulated-operational-2", Track.OPERATIONAL),
)


def annotation_demo_ensure(
    job: ScoringJob,
    *,
    calibration_size: int = CALIBRATION_SIZE,
    target_size: int = TARGET_SIZE,
    prefilled: int = PREFILLED_TARGET_ITEMS,
    sample_size: int = CALIBRATION_SAMPLE_SIZE,
) -> list[Study]:
    """Build the demo studies once; later calls return them unchanged. A small demo run
    (`demo --cases 1`) gets proportionally smaller studies rather than none."""
    project = Project.objects.filter(name=DEMO_PROJECT).first()
    if project is not None:
        _enrol(project, _demo_annotators())  # a demo site built before enrolment existed
        return list(project.studies.all())
    scored = job.conversation_results.filter(complete=True).count()
    calibration_size = max(1, min(calibration_size, scored // 4))
    target_size = min(target_size, scored - calibration_size)
    people = _simulated_people()
    calibration = _study(job, "Calibration round 1", "calibration", calibration_size, 1)
    _enrol(calibration.project, [*people[Track.CLINICAL], *people[Track.OPERATIONAL]])
    for track in (Track.CLINICAL, Track.OPERATIONAL):
        _prefill(calibration, [people[track][0]], calibration_size, job)
    _publish_guide(calibration)
    if target_size < 2:
        _enrol(calibration.project, _demo_annotators())
        return [calibration]
    target = _study(job, TARGET_STUDY, "target", target_size, None)
    for track in (Track.CLINICAL, Track.OPERATIONAL):
        _prefill(
            target,
            people[track],
            min(prefilled, target_size // 2),
            job,
            disagree=track == Track.CLINICAL,
        )
    _enrol(calibration.project, _demo_annotators())
    _run_the_target_study(target, people[Track.OPERATIONAL][0])
    sample_size = min(sample_size, scored - calibration_size - target_size)
    if sample_size < MIN_CALIBRATION_SAMPLE:
        return [calibration, target]
    sample = _study(job, CALIBRATION_SAMPLE, "target", sample_size, None)
    for track in (Track.CLINICAL, Track.OPERATIONAL):
        _prefill(sample, people[track], sample_size, job)
    return [calibration, target, sample]


def _demo_annotators() -> list[User]:
    return list(User.objects.filter(username__in=DEMO_ANNOTATORS, role=Role.ANNOTATOR))


def _researcher() -> User | None:
    return User.objects.filter(role=Role.RESEARCHER).order_by("pk").first()


def _enrol(project: Project, people: list[User]) -> None:
    probe = project.studies.first()
    for person in people:
        if not is_enrolled(probe, person):
            member_enrol(project=project, annotator=person, actor=_researcher())


def _run_the_target_study(target: Study, giver: User) -> None:
    """A deadline, the major disagreement sent to adjudication, and one reservation handed
    from a simulated annotator to the demo's operational annotator."""
    researcher = _researcher()
    study_deadline_set(
        target, deadline=timezone.now() + timedelta(days=DEADLINE_DAYS), actor=researcher
    )
    clinical = {v.rubric_id for v in panel_versions(target, Track.CLINICAL) if v.track}
    gap = next((g for g in study_gaps(target) if g.rubric in clinical), None)
    if gap is not None:  # for the senior demo clinician's track
        item = target.items.get(pk=gap.item)
        adjudication_send(study=target, item=item, rubric_id=gap.rubric, actor=researcher)
    receiver = User.objects.filter(username="operations", role=Role.ANNOTATOR).first()
    held = queue.next_assignment(study=target, annotator=giver)
    if receiver is not None and held is not None and held.status == AssignmentStatus.RESERVED:
        assignment_reassign(held, to=receiver, actor=researcher)


def _simulated_people() -> dict[str, list[User]]:
    people: dict[str, list[User]] = {Track.CLINICAL: [], Track.OPERATIONAL: []}
    for number, (username, track) in enumerate(SIMULATED_PEOPLE, start=1):
        user, _ = User.objects.get_or_create(
            username=username,
            defaults={
                "role": Role.ANNOTATOR,
                "track": track,
                "licensed": True,
                "first_name": "Simulated",
                "last_name": f"clinician {number} (scripted)",
            },
        )
        user.set_unusable_password()  # scripted: nobody logs in as it
        user.save()
        people[track].append(user)
    return people


def _study(job, name: str, kind: str, size: int, round_number: int | None) -> Study:
    spec = StudySpec(
        project_name=DEMO_PROJECT,
        name=name,
        kind=kind,
        sample_size=size,
        round_number=round_number,
        seed=2026,
    )
    return study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())


def _prefill(
    study: Study, people: list[User], items: int, job: ScoringJob, *, disagree: bool = False
) -> None:
    """Each simulated person in turn takes their next item and submits simulated scores; the
    queue's breadth-first order makes them complete the same items' overlap together. With
    `disagree`, the second person contradicts the first on their first shared item."""
    rng = random.Random(f"demo:{study.pk}")
    for round_number in range(items):
        for index, person in enumerate(people):
            assignment = queue.next_assignment(study=study, annotator=person)
            if assignment is not None:
                contrary = disagree and round_number == 0 and index == 1
                _submit_simulated(assignment, job, rng, contrary=contrary)


def _submit_simulated(
    assignment: Assignment, job: ScoringJob, rng: random.Random, *, contrary: bool = False
) -> None:
    clinician = simulated_clinician()
    rubric_ids = [v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)]
    means = dict(
        RubricResult.objects.filter(
            job=job, conversation_id=assignment.item.conversation_id
        ).values_list("rubric_id", "mean")
    )
    scores = {r: clinician.score(r, means.get(r), rng) for r in rubric_ids}
    if contrary:
        scores[rubric_ids[0]] = _contrary(assignment, rubric_ids[0])
    draft = Draft(scores=scores, feedback={rubric_ids[0]: clinician.feedback})
    Assignment.objects.filter(pk=assignment.pk).update(synthetic=True)
    annotation_submit(
        assignment, draft=draft, version=assignment.version, actor=assignment.annotator
    )


def _contrary(assignment: Assignment, rubric_id: str) -> int:
    """A score at least 2 points from the other submitted score on the same item (or 1)."""
    peer = (
        Assignment.objects.filter(item_id=assignment.item_id, status=AssignmentStatus.SUBMITTED)
        .exclude(pk=assignment.pk)
        .values_list("scores", flat=True)
        .first()
    )
    theirs = (peer or {}).get(rubric_id, 5)
    return 1 if theirs >= 3 else 5


def _publish_guide(calibration: Study) -> CalibrationGuide:
    example = calibration.items.order_by("position").first()
    return CalibrationGuide.objects.create(
        project=calibration.project,
        after_study=calibration,
        title="Calibration guide after round 1",
        body_markdown=GUIDE_FILE.read_text(encoding="utf-8"),
        examples=[
            {
                "item": example.pk,
                "note": "Booked before confirming the time with the "
                "patient: Workflow Accuracy 2, not 3.",
            }
        ]
        if example
        else [],
        published_at=timezone.now(),
    )
