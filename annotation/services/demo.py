"""The demo's clinician studies: a calibration round, a published guide and a target study drawn
from the demo run, part of each pre-filled by the scripted simulated clinician (marked
synthetic), the rest left for the demo annotators to score by hand."""

from __future__ import annotations

import random
from pathlib import Path

from django.utils import timezone

from accounts.models import Role, Track, User
from annotation.engine.simulated import simulated_clinician
from annotation.models import Assignment, CalibrationGuide, Project, Study
from annotation.services import queue
from annotation.services.annotations import Draft, annotation_submit
from annotation.services.studies import StudySpec, panel_versions, study_create
from jury.models import RubricResult, ScoringJob
from jury.services.rubrics import current_versions

DEMO_PROJECT = "Demo project"
GUIDE_FILE = Path(__file__).resolve().parent.parent / "data" / "demo_guide.md"
CALIBRATION_SIZE = 6
TARGET_SIZE = 16
PREFILLED_TARGET_ITEMS = 10
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
) -> list[Study]:
    """Build the demo studies once; later calls return them unchanged. A small demo run
    (`demo --cases 1`) gets proportionally smaller studies rather than none."""
    project = Project.objects.filter(name=DEMO_PROJECT).first()
    if project is not None:
        return list(project.studies.all())
    scored = job.conversation_results.filter(complete=True).count()
    calibration_size = max(1, min(calibration_size, scored // 4))
    target_size = min(target_size, scored - calibration_size)
    people = _simulated_people()
    calibration = _study(job, "Calibration round 1", "calibration", calibration_size, 1)
    for track in (Track.CLINICAL, Track.OPERATIONAL):
        _prefill(calibration, [people[track][0]], calibration_size, job)
    _publish_guide(calibration)
    if target_size < 2:
        return [calibration]
    target = _study(job, "Target study", "target", target_size, None)
    for track in (Track.CLINICAL, Track.OPERATIONAL):
        _prefill(target, people[track], min(prefilled, target_size // 2), job)
    return [calibration, target]


def _simulated_people() -> dict[str, list[User]]:
    people: dict[str, list[User]] = {Track.CLINICAL: [], Track.OPERATIONAL: []}
    for number, (username, track) in enumerate(SIMULATED_PEOPLE, start=1):
        user, _ = User.objects.get_or_create(
            username=username,
            defaults={"role": Role.ANNOTATOR, "track": track, "licensed": True,
                      "first_name": "Simulated", "last_name": f"clinician {number} (scripted)"},
        )  # fmt: skip
        user.set_unusable_password()  # scripted: nobody logs in as it
        user.save()
        people[track].append(user)
    return people


def _study(job, name: str, kind: str, size: int, round_number: int | None) -> Study:
    spec = StudySpec(
        project_name=DEMO_PROJECT, name=name, kind=kind, sample_size=size,
        round_number=round_number, seed=2026,
    )  # fmt: skip
    return study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())


def _prefill(study: Study, people: list[User], items: int, job: ScoringJob) -> None:
    """Each simulated person in turn takes their next item and submits simulated scores; the
    queue's breadth-first order makes them complete the same items' overlap together."""
    rng = random.Random(f"demo:{study.pk}")
    for _ in range(items):
        for person in people:
            assignment = queue.next_assignment(study=study, annotator=person)
            if assignment is not None:
                _submit_simulated(assignment, job, rng)


def _submit_simulated(assignment: Assignment, job: ScoringJob, rng: random.Random) -> None:
    clinician = simulated_clinician()
    rubric_ids = [v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)]
    means = dict(
        RubricResult.objects.filter(
            job=job, conversation_id=assignment.item.conversation_id
        ).values_list("rubric_id", "mean")
    )
    draft = Draft(
        scores={r: clinician.score(r, means.get(r), rng) for r in rubric_ids},
        feedback={rubric_ids[0]: clinician.feedback},
    )
    Assignment.objects.filter(pk=assignment.pk).update(synthetic=True)
    annotation_submit(assignment, draft=draft, version=assignment.version,
                      actor=assignment.annotator)  # fmt: skip


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
        else [],  # fmt: skip
        published_at=timezone.now(),
    )
