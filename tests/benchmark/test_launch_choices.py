"""What a launch chooses. Generation settings where models are chosen: two settings of one model
are two rows of one run, the run's config records what each model runs with, settings a model
refuses stop the launch (and a jury) before anything is created, and pages name the settings in
words. Repetitions: the launch says when they are too few for pass^k."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from benchmark.models import Run
from benchmark.services import runs
from jury.services.juries import judges_parse
from tests.benchmark.conftest import launch
from tests.support.text import squashed

HIGH, LOW = "openai/gpt-5.5@effort=high", "openai/gpt-5.5@effort=low"


def test_two_efforts_of_one_model_are_two_rows_of_one_run(ready_set, baseline):
    run = launch(ready_set, baseline, models=(HIGH, LOW))

    assert [agent.model for agent in run.agents.all()] == [HIGH, LOW]
    assert [agent.label for agent in run.agents.all()] == [
        "openai/gpt-5.5, effort high · baseline",
        "openai/gpt-5.5, effort low · baseline",
    ]
    assert run.config["generation"] == {HIGH: {"effort": "high"}, LOW: {"effort": "low"}}


def test_a_run_without_settings_keeps_the_config_it_always_had(ready_set, baseline):
    run = launch(ready_set, baseline)
    assert "generation" not in run.config


@pytest.mark.parametrize(
    ("models", "reason"),
    [
        (("openai/gpt-5.5@temperature=0",), "refuses a custom temperature"),
        (("anthropic/claude-opus-4-8@thinking=512",), "at least 1024 tokens"),
        (("offline/careful@effort=high",), "takes no reasoning effort"),
    ],
)
def test_settings_a_model_refuses_stop_the_launch_with_the_reason(
    ready_set, baseline, models, reason
):
    with pytest.raises(runs.RunError, match=reason):
        launch(ready_set, baseline, models=models)
    assert not Run.objects.exists()


def test_a_judge_seat_with_refused_settings_names_its_line():
    with pytest.raises(ValidationError) as refused:
        judges_parse("openai/gpt-5.5@effort=high\nopenai/gpt-5.5@top_p=0.5")
    assert "Line 2" in str(refused.value) and "refuses a custom top_p" in str(refused.value)
    assert judges_parse("openai/gpt-5.5@effort=high\nopenai/gpt-5.5@effort=low") == [HIGH, LOW]


def test_the_run_page_names_each_models_settings(ready_set, baseline, researcher_client):
    run = launch(ready_set, baseline, models=(HIGH,))
    page = squashed(researcher_client.get(reverse("benchmark:run", args=[run.pk])))
    assert "openai/gpt-5.5, effort high" in page


@pytest.mark.parametrize(("repetitions", "warned"), [(2, True), (4, False)])
def test_the_launch_says_when_repetitions_are_too_few_for_pass_k(
    admin_client_, ready_set, baseline, repetitions, warned
):
    from tests.benchmark.test_run_pages import launch_form

    form = launch_form(ready_set, baseline, repetitions=repetitions)
    response = admin_client_.post(reverse("benchmark:run_new"), form, follow=True)
    page = squashed(response)
    assert response.redirect_chain, page[:500]
    assert ("will stop at k = 2" in page) is warned


def test_the_forms_threshold_is_the_reports():
    from benchmark.forms import RELIABILITY_REPETITIONS
    from jury.engine.reliability import RECOMMENDED_REPETITIONS

    assert RELIABILITY_REPETITIONS == RECOMMENDED_REPETITIONS
