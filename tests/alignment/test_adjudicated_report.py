"""The agreement report offers "jury vs adjudicated" beside "jury vs clinician mean": the
engine's own figures with each adjudicated score as the clinician value of its conversation;
the disagreement report shows the adjudication. A new adjudication recomputes the report."""

import pandas as pd
import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from alignment.engine.adjudicated import with_adjudicated
from alignment.engine.agreement import agreement_table
from alignment.engine.frames import ITEM, RATER, RUBRIC, SCORE
from alignment.services.frames import study_frames
from alignment.services.reports import study_report
from annotation.models import Adjudication
from jury.models import RubricResult

pytestmark = pytest.mark.django_db
RUBRIC_ID = "clinical_safety"


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def adjudicate(study, *, score):
    """An adjudication of the first item on clinical safety: finished with `score`, or (None)
    still waiting for a senior clinician."""
    item = study.items.order_by("position").first()
    decided = score is not None
    return Adjudication.objects.create(
        item=item, rubric_id=RUBRIC_ID, reason="clinicians", gap=2, score=score,
        rationale="the red flag was missed" if decided else "",
        adjudicated_at=timezone.now() if decided else None,
    )  # fmt: skip


def far_from_the_jury(study) -> int:
    item = study.items.order_by("position").first()
    mean = RubricResult.objects.get(
        job=study.scoring_jobs.get(), conversation=item.conversation, rubric_id=RUBRIC_ID
    ).mean
    return 1 if mean >= 3 else 5


def test_jury_vs_adjudicated_uses_the_adjudicated_score_as_the_clinician_value(annotated_study):
    before = study_report(annotated_study, resamples=50)
    assert before.adjudicated == {} and before.adjudicated_items == {}
    adjudication = adjudicate(annotated_study, score=far_from_the_jury(annotated_study))
    report = study_report(annotated_study, resamples=50)  # a new state: recomputed
    assert report.adjudicated_items == {RUBRIC_ID: 1}
    frames = study_frames(annotated_study)
    settled = [(adjudication.item.conversation_id, RUBRIC_ID, adjudication.score)]
    expected = agreement_table(
        with_adjudicated(frames.clinicians_long[[ITEM, RUBRIC, RATER, SCORE]],
                         pd.DataFrame(settled, columns=[ITEM, RUBRIC, SCORE])),
        frames.jury_long, resamples=50, seed=0,
    )[RUBRIC_ID]  # fmt: skip
    assert report.adjudicated[RUBRIC_ID] == expected
    by_mean = report.section(RUBRIC_ID).agreement
    assert expected.major_disagreements == by_mean.major_disagreements + 1
    assert expected.jury_adjacent.value < by_mean.jury_adjacent.value
    (row,) = [r for r in report.adjudicated_rows if r["rubric"].rubric_id == RUBRIC_ID]
    assert row["items"] == 1 and row["mean"] == by_mean


def test_an_adjudication_still_waiting_changes_no_figure(annotated_study):
    adjudicate(annotated_study, score=None)
    assert study_report(annotated_study, resamples=50).adjudicated_items == {}


def test_the_pages_show_the_adjudication(researcher_client, annotated_study):
    empty = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    assert 'id="adjudicated-table"' not in empty.content.decode()
    assert "Send major disagreements to a senior clinician" in empty.content.decode()
    adjudication = adjudicate(annotated_study, score=far_from_the_jury(annotated_study))
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    assert 'id="adjudicated-table"' in page.content.decode()
    rows = researcher_client.get(
        reverse("alignment:disagreements", args=[annotated_study.pk]), {"rubric": RUBRIC_ID,
                                                                       "limit": 500}
    ).content.decode()  # fmt: skip
    shown = f'id="adjudication-{adjudication.item_id}-{RUBRIC_ID}"'
    assert shown in rows and "the red flag was missed" in rows
