"""The demo reviews its run's simulated patient once, and reuses that review afterwards."""

import pytest

from fidelity.models import ReviewStatus
from fidelity.services import reviews
from jobs.models import JobStatus
from portal.services import demo
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db


def review_inline(review) -> None:
    for pk in review.conversation_reviews.values_list("pk", flat=True):
        reviews.conversation_review_execute(pk)


def test_the_demo_review_covers_the_run_and_is_made_once():
    run = played(launched_run(enriched_set(name="Demo-like", size=2, sampler_seed=3)))
    waited = []

    review = demo.demo_review_ensure(run, review_inline, lambda *args: waited.append(args))
    again = demo.demo_review_ensure(run, review_inline, lambda *args: None)

    review.refresh_from_db()
    assert review.status == JobStatus.FINISHED and review.reviewer_model == demo.DEMO_REVIEWER
    units = review.conversation_reviews
    assert units.count() == run.conversations.scorable().count() > 0
    assert not units.filter(status=ReviewStatus.PENDING).exists()
    count, total, label = waited[0]
    assert count() == total == units.count() and "fidelity" in label
    assert again.pk == review.pk and run.fidelity_reviews.count() == 1
