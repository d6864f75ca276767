"""Fixtures for the alignment reports: a study drawn from the jury's module-scoped scored run
(8 conversations, offline demo jury) with submitted annotations of both tracks whose scores
sit near the jury mean (some one point off, one item far off), stored directly as the review
screen would leave them."""

import pytest

from accounts.models import Track
from annotation.models import Assignment
from jury.models import RubricResult
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate, full_scores
from tests.jury.services.builders import (  # noqa: F401 - module-scoped scored run
    scored_job,
    world,
    world_job,
)

# Per annotator: how far from the rounded jury mean their scores sit on every judged rubric.
OFFSETS = (0, -1, 1)


def jury_means(job, item) -> dict[str, float]:
    return dict(
        RubricResult.objects.filter(job=job, conversation=item.conversation).values_list(
            "rubric_id", "mean"
        )
    )


def near_jury(job, item, track: str, offset: int) -> dict[str, int]:
    """Full scores for the track: the rounded jury mean plus the offset (clipped to 1-5);
    realism rubrics get 4."""
    means = jury_means(job, item)
    scores = full_scores(item.study, track, score=4)
    for rubric in scores:
        if rubric in means:
            scores[rubric] = min(5, max(1, int(means[rubric] + 0.5) + offset))
    return scores


def annotate_study(study, job, people: dict[str, list]) -> list[Assignment]:
    done = []
    for item in study.items.order_by("position"):
        for track, group in people.items():
            for offset, person in zip(OFFSETS, group, strict=False):
                scores = near_jury(job, item, track, offset)
                done.append(annotate(item, person, scores=scores, feedback=_feedback(scores)))
    return done


def _feedback(scores: dict) -> dict:
    first = next(iter(scores))
    return {first: "Booked without confirming the time with the patient."}


@pytest.fixture
def people(db):
    return {
        Track.CLINICAL: annotators(Track.CLINICAL, 2),
        Track.OPERATIONAL: annotators(Track.OPERATIONAL, 2),
    }


@pytest.fixture
def annotated_study(scored_job, people):  # noqa: F811 - the imported fixture
    study = new_study(scored_job, size=8)
    annotate_study(study, scored_job, people)
    return study
