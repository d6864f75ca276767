"""A scoring job's forecast from an earlier scoring job (jury.services.forecasts)."""

import pytest

from jury.models import ScoringJob
from jury.services import forecasts, juries
from jury.services.rubrics import current_versions

pytestmark = pytest.mark.django_db


def test_with_no_finished_scoring_job_it_asks_for_a_pilot(played_run, offline_jury):
    result = forecasts.scoring_forecast(run=played_run, jury=offline_jury)
    assert result.source == forecasts.NO_SOURCE
    assert result.unobserved == ["judge 1", "judge 2"]


def test_the_same_job_again_forecasts_what_it_called(played_run, scored_job):
    result = forecasts.scoring_forecast(run=played_run, jury=scored_job.jury)
    assert "of the same run" in result.source
    units = played_run.conversations.scorable().count() * len(current_versions(judged_only=True))
    for seat, model in enumerate(scored_job.jury.judges, start=1):
        role = result.roles[seat - 1]
        scores = scored_job.scores.filter(judge_model=model)
        assert role.role == f"judge {seat}" and role.units == units
        assert role.figures["calls"].estimate == pytest.approx(
            sum(scores.values_list("calls", flat=True)) * units / scores.count()
        )


def test_a_new_judge_model_is_priced_and_an_unpriced_one_named(played_run, scored_job):
    jury = juries.jury_create(
        name="Real judges", judges=["openai/gpt-4o-mini", "openai-compatible/no-price-here"]
    )
    result = forecasts.scoring_forecast(run=played_run, jury=jury)
    priced, unpriced = result.roles
    assert "this model is new" in priced.basis
    assert priced.cost.estimate > 0
    assert unpriced.cost is None
    assert result.unpriced == ["openai-compatible/no-price-here"]
    assert ScoringJob.objects.count() == 1  # a forecast creates nothing


def test_prompt_cache_reads_of_the_earlier_job_lower_the_forecast_cost(played_run, scored_job):
    jury = juries.jury_create(name="Claude judge", judges=["anthropic/claude-haiku-4-5"])
    plain = forecasts.scoring_forecast(run=played_run, jury=jury).cost.estimate
    # As if the earlier job's judges had read most of each prompt from the provider's cache.
    for score in scored_job.scores.all():
        score.cached_input_tokens = score.input_tokens * 8 // 10
        score.save(update_fields=["cached_input_tokens"])

    cached = forecasts.scoring_forecast(run=played_run, jury=jury).cost.estimate

    assert 0 < cached < plain
