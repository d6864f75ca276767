"""Load a calibration round's submitted scores and the jury means, and build its report."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.engine.round_report import RoundReport, Score, round_report
from annotation.models import Assignment, AssignmentStatus, Study
from jury.models import RubricResult


@dataclass(frozen=True)
class StudyRoundReport:
    report: RoundReport
    rubric_names: dict[str, str]
    positions: dict[int, int]  # item id -> position shown to researchers (1-based)
    synthetic_left_out: int  # synthetic annotations not in the figures


def study_round_report(study: Study, *, include_synthetic: bool = False) -> StudyRoundReport:
    """Submitted, valid annotations of the study against the jury of its scoring jobs.
    Synthetic (simulated clinician) annotations count only when the researcher includes them."""
    assignments = Assignment.objects.filter(
        item__study=study, status=AssignmentStatus.SUBMITTED, invalidated_at__isnull=True
    ).values_list(
        "public_id", "annotator__username", "item_id", "practice", "synthetic", "imported", "scores"
    )
    scores, left_out = [], 0
    for public_id, username, item_id, practice, synthetic, imported, by_rubric in assignments:
        if synthetic and not include_synthetic:
            left_out += 1
            continue
        scores += [
            Score(username, str(public_id), item_id, rubric, score, practice, synthetic, imported)
            for rubric, score in by_rubric.items()
        ]
    return StudyRoundReport(
        report=round_report(scores, jury_means(study)),
        rubric_names={v.rubric_id: v.name for v in study.rubric_versions.all()},
        positions={pk: pos + 1 for pk, pos in study.items.values_list("pk", "position")},
        synthetic_left_out=left_out,
    )


def jury_means(study: Study) -> dict[tuple[int, str], float]:
    """(item id, rubric id) -> jury mean, from the first of the study's jobs that scored the
    conversation (the one its sample was drawn from)."""
    item_of = dict(study.items.values_list("conversation_id", "pk"))
    results = (
        RubricResult.objects.filter(job__in=study.scoring_jobs.all(), conversation_id__in=item_of)
        .order_by("-job_id")
        .values_list("conversation_id", "rubric_id", "mean")
    )
    # Later jobs first, so the earliest job's mean is the one left in the dict.
    return {(item_of[cid], rubric): mean for cid, rubric, mean in results}
