"""Studies: create one from scoring jobs with a stratified sample; lock it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import NotificationKind
from annotation.engine.sampling import Candidate, Pick, stratified_sample
from annotation.models import Project, ProjectMember, Study, StudyItem, StudyKind, StudyStatus
from annotation.services.outbox import notify
from audit.services import audit_record
from jury.models import RubricResult, RubricVersion, ScoringJob
from llm.engine.generation import base_model

OVERLAP_RANGE = range(2, 5)


@dataclass(frozen=True)
class StudySpec:
    project_name: str
    name: str
    kind: str
    sample_size: int
    overlap_clinical: int = 2
    overlap_operational: int = 2
    round_number: int | None = None
    seed: int = 0
    include_infeasible: bool = False
    reservation_minutes: int = 45
    alt_test_epsilon: float = 0.2
    drift_flag_points: float = 0.5


@transaction.atomic
def study_create(
    *,
    spec: StudySpec,
    scoring_jobs: Sequence[ScoringJob],
    rubric_versions: Sequence[RubricVersion],
    created_by=None,
) -> Study:
    """Create the study and draw its sample; refuses a spec that cannot make a fair study."""
    _check_spec(spec, scoring_jobs, rubric_versions)
    project, _ = Project.objects.get_or_create(name=spec.project_name.strip())
    study = Study(
        project=project,
        name=spec.name.strip(),
        kind=spec.kind,
        round_number=spec.round_number if spec.kind == StudyKind.CALIBRATION else None,
        sample_size=spec.sample_size,
        overlap_clinical=spec.overlap_clinical,
        overlap_operational=spec.overlap_operational,
        seed=spec.seed,
        include_infeasible=spec.include_infeasible,
        reservation_minutes=spec.reservation_minutes,
        alt_test_epsilon=spec.alt_test_epsilon,
        drift_flag_points=spec.drift_flag_points,
        created_by=created_by,
    )
    study.full_clean()
    study.save()
    study.scoring_jobs.set(scoring_jobs)
    study.rubric_versions.set(rubric_versions)
    _draw_sample(study, scoring_jobs, rubric_versions)
    audit_record(
        actor=created_by,
        action="study.created",
        target=study,
        after={
            "kind": study.kind,
            "round": study.round_number,
            "items": study.items.count(),
            "jobs": [job.pk for job in scoring_jobs],
            "rubric_versions": [v.pk for v in rubric_versions],
        },
    )
    _announce(study)
    return study


def _announce(study: Study) -> None:
    """Tell the project's enrolled annotators who may take the new study that it is open."""
    members = (
        ProjectMember.objects.active().filter(project=study.project).select_related("annotator")
    )
    people = [m.annotator for m in members if m.annotator.licensed or study.is_calibration]
    notify(
        kind=NotificationKind.STUDY_OPENED,
        recipients=people,
        key=f"study-opened:{study.pk}",
        context={"study": study.pk},
    )


def _check_spec(spec: StudySpec, jobs, versions) -> None:
    errors: dict[str, str] = {}
    if not spec.project_name.strip():
        errors["project_name"] = "Name the project the study belongs to."
    if spec.kind not in StudyKind.values:
        errors["kind"] = f"Kind must be one of {', '.join(StudyKind.values)}."
    if spec.kind == StudyKind.CALIBRATION and not spec.round_number:
        errors["round_number"] = "A calibration round needs its round number (1, 2, ...)."
    for track, overlap in (
        ("overlap_clinical", spec.overlap_clinical),
        ("overlap_operational", spec.overlap_operational),
    ):
        if overlap not in OVERLAP_RANGE:
            errors[track] = "Overlap is 2 to 4 annotations per rubric per conversation."
    if spec.sample_size < 1:
        errors["sample_size"] = "The sample needs at least one conversation."
    if not jobs:
        errors["scoring_jobs"] = "Pick at least one finished scoring job to draw from."
    if not any(v.kind == "dimension" for v in versions):
        errors["rubric_versions"] = "Pick at least one judged rubric version."
    leak = _name_leak(spec.name, jobs)
    if leak:
        errors["name"] = (
            f"Annotators see the study name; it must not name a model or agent ({leak!r})."
        )
    if errors:
        raise ValidationError(errors)


def _name_leak(name: str, jobs) -> str:
    """A model string, model name or agent label of the drawn runs that the name contains."""
    lowered = name.lower()
    for job in jobs:
        for agent in job.run.agents.all():
            base = base_model(agent.model)  # the model without its generation settings
            for word in (agent.model, base, base.split("/")[-1], agent.label):
                if word and len(word) > 2 and word.lower() in lowered:
                    return word
    return ""


def _draw_sample(study: Study, jobs, versions) -> None:
    judged = [v.rubric_id for v in versions if v.kind == "dimension"]
    candidates = study_candidates(study, jobs, judged)
    if not candidates:
        raise ValidationError(
            {
                "scoring_jobs": "No conversation of these jobs is left to sample: none has a "
                "complete jury result, or all are held out by earlier studies of the project."
            }
        )
    sample = stratified_sample(candidates, size=study.sample_size, seed=study.seed)
    by_id = {candidate.conversation_id: candidate for candidate in candidates}
    StudyItem.objects.bulk_create(
        _item(study, position, pick, by_id[pick.conversation_id], sample)
        for position, pick in enumerate(sample.picks)
    )
    study.coverage = sample.coverage() | {"candidates": len(candidates)}
    study.save(update_fields=["coverage"])


def _item(study: Study, position: int, pick: Pick, candidate: Candidate, sample) -> StudyItem:
    """A study item with its design: its stratum (key and home cell) with the stratum's size
    and draws, its cell of every rubric (jury bins) and its inclusion probability."""
    stratum = sample.design.stratum_of(candidate)
    return StudyItem(
        study=study,
        conversation_id=pick.conversation_id,
        position=position,
        stratum=item_stratum(pick.stratum, pick.cell),
        jury_bins=candidate.bins(),
        cell_available=stratum.size,
        cell_drawn=stratum.drawn,
        inclusion_probability=stratum.probability,
    )


def item_stratum(key: str, home: tuple[str, str, int]) -> dict:
    """What an item records of its place in the design: the design stratum's key and its own
    home cell (the rarest of its cells)."""
    return {"key": key, "model": home[0], "rubric": home[1], "bin": home[2]}


def study_candidates(study: Study, jobs, rubric_ids: Sequence[str]) -> list[Candidate]:
    """Complete jury results of the jobs' conversations, one per conversation (the first job
    that scored it), minus the conversations this study may not use."""
    results = (
        RubricResult.objects.filter(job__in=jobs, rubric_id__in=rubric_ids)
        .exclude(conversation__in=held_out_conversations(study))
        .values_list(
            "conversation_id",
            "job_id",
            "conversation__run_agent__label",
            "rubric_id",
            "mean",
            "passed",
        )
        .order_by("job_id")
    )
    if not study.include_infeasible:
        results = results.exclude(conversation__entry__infeasible=True)
    first_job: dict[int, int] = {}
    labels: dict[int, str] = {}
    scores: dict[int, dict[str, float]] = {}
    passes: dict[int, dict[str, bool]] = {}
    for conversation_id, job_id, label, rubric_id, mean, passed in results:
        if first_job.setdefault(conversation_id, job_id) != job_id:
            continue
        labels[conversation_id] = label
        scores.setdefault(conversation_id, {})[rubric_id] = mean
        passes.setdefault(conversation_id, {})[rubric_id] = passed
    wanted = set(rubric_ids)
    return [
        Candidate(cid, labels[cid], s, passes[cid]) for cid, s in scores.items() if set(s) == wanted
    ]


def held_out_conversations(study: Study):
    """Conversations this study may not draw: every conversation of an earlier study of the
    project for a calibration round (each round is fresh), and every calibration conversation
    of the project for a target study."""
    others = StudyItem.objects.filter(study__project=study.project).exclude(study=study)
    if study.kind == StudyKind.TARGET:
        others = others.filter(study__kind=StudyKind.CALIBRATION)
    return others.values("conversation_id")


def study_lock(study: Study, *, actor=None) -> Study:
    before = study.status
    study.status, study.locked_at = StudyStatus.LOCKED, timezone.now()
    study.save(update_fields=["status", "locked_at"])
    audit_record(
        actor=actor,
        action="study.locked",
        target=study,
        before={"status": before},
        after={"status": study.status},
    )
    return study


def study_guide_show(study: Study, *, shown: bool, actor=None) -> Study:
    """Whether the annotators of a target study see the project's published calibration guide
    (calibration rounds always show it). Allowed while the study is open, like any change of
    what annotators read."""
    if study.is_calibration:
        raise ValidationError("A calibration round always shows the project's guide.")
    if study.is_locked:
        raise ValidationError("The study is locked; nothing about it changes any more.")
    before = study.guide_in_target
    study.guide_in_target = shown
    study.save(update_fields=["guide_in_target"])
    audit_record(
        actor=actor,
        action="study.guide_shown",
        target=study,
        before={"guide_in_target": before},
        after={"guide_in_target": shown},
    )
    return study


def panel_versions(study: Study, track: str) -> list[RubricVersion]:
    """The rubric versions an annotator of `track` scores in this study, in rubric order:
    the judged rubrics of their track, then the realism rubrics every clinician scores."""
    versions = sorted(study.rubric_versions.all(), key=lambda v: (v.kind != "dimension", v.order))
    return [v for v in versions if v.kind == "realism" or v.track == track]
