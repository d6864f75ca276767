"""The model report with and without the conversations a fidelity review flagged: a run played
by the lapsing scripted patient (offline/lapses), scored by the offline jury and reviewed by
the offline reviewer, built once for the module."""

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from benchmark.services import conversations
from fidelity.services import reviews
from fidelity.services.reports import flagged_conversation_ids
from jury.models import ScoringJob
from jury.services import juries
from jury.services.fidelity_split import fidelity_split
from jury.services.reports import Report
from tests.fidelity.conftest import review_now
from tests.jury.services.builders import MEMORY_CACHES, scored
from tests.support.builders import enriched_set, launched_run, played

MODELS = ("offline/careful", "offline/careless")


@pytest.fixture(scope="module")
def lapsing_world(django_db_setup, django_db_blocker):
    """(job id, run), committed for the module; flushed afterwards."""
    with override_settings(CACHES=MEMORY_CACHES):
        caches["llm"].clear()
        conversations.model_router.cache_clear()
        with django_db_blocker.unblock():
            cases = enriched_set(name="Lapsing set", size=8, sampler_seed=5)
            run = played(launched_run(cases, models=MODELS, patient_model="offline/lapses"))
            job = scored(run, juries.jury_demo_ensure())
        yield job.pk, run
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
        conversations.model_router.cache_clear()


@pytest.fixture
def scored_job(db, lapsing_world) -> ScoringJob:
    return ScoringJob.objects.get(pk=lapsing_world[0])


@pytest.fixture
def reviewed_job(scored_job) -> ScoringJob:
    review_now(reviews.review_launch(run=scored_job.run, reviewer_model="offline/reviewer"))
    return scored_job


def test_no_review_no_split_and_the_page_says_how_to_get_one(researcher_client, scored_job):
    assert fidelity_split(Report(scored_job)) is None

    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()

    assert 'id="no-fidelity-review"' in page
    assert reverse("fidelity:review_new", args=[scored_job.run_id]) in page


def test_without_flagged_drops_exactly_the_flagged_conversations(reviewed_job):
    report = Report(reviewed_job)
    split = fidelity_split(report)
    flagged = flagged_conversation_ids(split.review)
    frame = report.conversations
    assert frame["conversation_id"].isin(flagged).any(), "the lapsing patient lapsed nowhere"

    assert {row.model for row in split.rows} == set(frame["model"]) and len(split.rows) == 2
    for row in split.rows:
        mine = frame[frame["model"] == row.model]
        clean = mine[~mine["conversation_id"].isin(flagged)]
        assert row.all.n == len(mine)
        assert row.flagged == len(mine) - len(clean)
        assert row.unflagged.n == row.all.n - row.flagged
        assert row.all.mean == pytest.approx(mine["aggregate"].mean())
        assert row.unflagged.mean == pytest.approx(clean["aggregate"].mean())
        if row.flagged and len(clean) > 1:
            assert row.unflagged.interval_text != row.all.interval_text


def test_the_report_page_shows_both_columns(researcher_client, reviewed_job):
    split = fidelity_split(Report(reviewed_job))

    page = researcher_client.get(reverse("jury:report", args=[reviewed_job.pk])).content.decode()

    assert 'id="fidelity-split-table"' in page
    assert reverse("fidelity:review", args=[split.review.pk]) in page
    assert "no-fidelity-review" not in page
