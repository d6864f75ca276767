"""The study report sets the fidelity reviewer's verdicts against clinicians' realism scores:
a study of the jury's scored run, annotated near the jury, with realism scores chosen per
conversation and a finished review whose verdicts are set here."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from accounts.models import Track
from alignment.services.fidelity_comparison import fidelity_comparisons
from alignment.services.reports import ReportFilters, study_report
from annotation.models import Assignment
from fidelity.engine import stats
from fidelity.models import ConversationReview
from fidelity.services import reviews
from tests.alignment.conftest import near_jury
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate
from tests.fidelity.conftest import review_now
from tests.jury.services.builders import (  # noqa: F401 - module-scoped scored run
    scored_job,
    world,
    world_job,
)

pytestmark = pytest.mark.django_db
FLAGGED_REALISM, CLEAN_REALISM, SURPRISE_REALISM = 2, 4, 1


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(scored_job):  # noqa: F811 - the imported fixture
    return new_study(scored_job, size=8)


def realism_for(study, conversation_id: int, flagged: set[int], surprise: int) -> int:
    if conversation_id in flagged:
        return FLAGGED_REALISM
    return SURPRISE_REALISM if conversation_id == surprise else CLEAN_REALISM


def annotated(study, job, flagged: set[int], surprise: int) -> dict[int, int]:
    """Two clinicians per track score every item; realism rubrics get the chosen score."""
    chosen = {}
    people = {track: annotators(track, 2) for track in (Track.CLINICAL, Track.OPERATIONAL)}
    for item in study.items.order_by("position"):
        realism = realism_for(study, item.conversation_id, flagged, surprise)
        chosen[item.conversation_id] = realism
        for track, group in people.items():
            scores = near_jury(job, item, track, 0)
            scores.update({r: realism for r in scores if "realism" in r})
            for person in group:
                annotate(item, person, scores=scores)
    return chosen


@pytest.fixture
def reviewed_study(study, scored_job):  # noqa: F811 - the imported fixture
    ids = list(study.items.order_by("position").values_list("conversation_id", flat=True))
    flagged = set(ids[:2])
    review = review_now(
        reviews.review_launch(run=scored_job.run, reviewer_model="offline/reviewer")
    )
    units = ConversationReview.objects.filter(review=review)
    units.update(flagged=False, findings=[])
    units.filter(conversation_id__in=flagged).update(flagged=True)
    chosen = annotated(study, scored_job, flagged, surprise=ids[-1])
    return study, flagged, chosen


def test_no_review_no_comparison(study, scored_job):  # noqa: F811 - the imported fixture
    annotated(study, scored_job, set(), surprise=0)
    assert fidelity_comparisons(study_report(study)) == []


def test_gap_and_agreement_match_the_scores_given(reviewed_study):
    study, flagged, chosen = reviewed_study

    comparisons = fidelity_comparisons(study_report(study))

    assert comparisons and {c.rubric.rubric_id for c in comparisons} >= {"conversation_realism"}
    clean = [score for item, score in chosen.items() if item not in flagged]
    for comparison in comparisons:
        assert comparison.n == len(chosen) and comparison.flagged == len(flagged)
        gap = comparison.gap["gap"]
        assert gap.estimate == pytest.approx(FLAGGED_REALISM - sum(clean) / len(clean))
        assert gap.estimate < 0
        assert gap.low <= gap.estimate <= gap.high
        # The surprise conversation: clinicians found it unrealistic, the reviewer did not.
        agreement = comparison.agreement["agreement"]
        assert agreement.estimate == pytest.approx((len(chosen) - 1) / len(chosen))
        kappa = comparison.agreement["kappa"]
        assert kappa.defined and 0 < kappa.estimate < 1
        assert comparison.unrealistic_at_most == stats.UNREALISTIC_AT_MOST


def test_staff_see_the_comparison_and_annotators_cannot_open_the_report(
    researcher_client, client, reviewed_study
):
    study = reviewed_study[0]
    url = reverse("alignment:report", args=[study.pk])

    page = researcher_client.get(url).content.decode()

    assert 'id="fidelity-comparison-table"' in page and "no-fidelity-comparison" not in page
    client.force_login(Assignment.objects.filter(item__study=study).first().annotator)
    assert client.get(url).status_code in (302, 403)


def test_a_model_filter_compares_that_models_conversations_only(reviewed_study):
    study, flagged, chosen = reviewed_study
    labels = dict(study.items.values_list("conversation_id", "conversation__run_agent__label"))
    label = labels[min(flagged)]
    own = {item for item, own_label in labels.items() if own_label == label}
    assert own < set(labels)  # the filter leaves conversations out

    comparisons = fidelity_comparisons(study_report(study, ReportFilters(model=label)))

    assert comparisons
    for comparison in comparisons:
        assert comparison.n == len(own)
        assert comparison.flagged == len(flagged & own)
