"""Builders for the re-scoring loop tests: a study of the jury's scored run with clinician
scores constructed against the offline judges, and re-scores executed in this process."""

from accounts.models import Track
from alignment.services import rescoring as loop
from jury.models import RubricResult
from jury.services import juries
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate, full_scores
from tests.jury.services.builders import score_now

LENIENT_JURY = "Lenient single judge"


def strict_clinician_scores(job, item, track: str) -> dict[str, int]:
    """One point under the standard offline judge on every judged rubric.

    The demo jury (offline/standard + offline/strict) has mean s - 0.5 where the standard judge
    gives s, so it sits within half a point of these clinicians; offline/lenient gives s + 1,
    two points above them wherever neither judge is capped at 1 or 5."""
    means = dict(
        RubricResult.objects.filter(job=job, conversation=item.conversation).values_list(
            "rubric_id", "mean"
        )
    )
    scores = full_scores(item.study, track, score=4)
    for rubric, mean in means.items():
        if rubric in scores:
            standard = int(mean + 0.5)  # round half up: (s + s - 1) / 2 rounds to s
            scores[rubric] = max(1, standard - 1)
    return scores


def constructed_study(job, *, annotated_items: int | None = None, name="Loop study"):
    """A target study of the run's feasible conversations (6 of 8); the first
    `annotated_items` (all by default) scored by two clinicians of each track, as
    strict_clinician_scores says."""
    study = new_study(job, name=name, size=8)
    people = {
        Track.CLINICAL: annotators(Track.CLINICAL, 2, prefix=f"{name}-c"),
        Track.OPERATIONAL: annotators(Track.OPERATIONAL, 2, prefix=f"{name}-o"),
    }
    items = list(study.items.order_by("position"))[:annotated_items]
    for item in items:
        for track, group in people.items():
            for person in group:
                annotate(item, person, scores=strict_clinician_scores(job, item, track))
    return study


def lenient_jury():
    return juries.jury_create(name=LENIENT_JURY, judges=["offline/lenient"])


def judged_versions(study):
    return list(study.rubric_versions.filter(kind="dimension"))


def rescored(study, jury, versions=None, **options):
    """Re-score the study and execute every judge call here, as the workers would."""
    versions = judged_versions(study) if versions is None else versions
    jobs = loop.study_rescore(study, jury=jury, rubric_versions=versions, **options)
    return [score_now(job) for job in jobs]
