"""Fixtures of the API tests: a played and scored run built through the services."""

import pytest
from django.core.cache import caches

from jury.services import juries, scoring
from tests.support.builders import enriched_set, launched_run, played


@pytest.fixture
def scored_run(db):
    """Two scripted agents on four cases, played and scored by the demo jury."""
    run = played(launched_run(enriched_set(size=4), models=("offline/careful", "offline/careless")))
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    job.refresh_from_db()
    return run, job


@pytest.fixture
def fresh_rate_counts():
    """The test starts and leaves the rate counts empty (they live in a shared cache)."""
    caches["api"].clear()
    yield
    caches["api"].clear()
