"""Where the spread comes from, where researchers read it: the report's table, figure and
downloads, the API's table, and the plan-a-run page with its costs and its link to the launch
form (a run of 3 cases x 3 repetitions, two scripted models, scored by the two-judge demo jury)."""

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from benchmark.models import ModelCall
from jury.engine import decision
from jury.engine.variance import COLUMNS, COMPONENTS
from jury.models import JudgeScore
from jury.services import juries, planning
from jury.services.reports import Report
from llm.services.prices import price_set
from tests.jury.services.builders import scored
from tests.support.builders import enriched_set, launched_run, played
from tests.support.text import squashed

pytestmark = pytest.mark.django_db
REPETITIONS = 3
MODELS = ("offline/careful", "offline/careless")


@pytest.fixture
def repeated_job():
    cases = enriched_set(name="Spread", size=3, sampler_seed=9)
    run = played(launched_run(cases, models=MODELS, repetitions=REPETITIONS))
    return scored(run, juries.jury_demo_ensure())


def test_the_report_has_every_component_per_model_and_measure(repeated_job):
    report = Report(repeated_job)

    table = report.variance

    assert list(table.columns) == COLUMNS
    measures = 1 + len(report.rubrics)
    assert len(table) == len(MODELS) * measures * len(COMPONENTS)
    aggregate = table[table["measure"] == "aggregate"]
    assert set(aggregate["n_cases"]) == {3} and set(aggregate["n_conversations"]) == {9}
    assert set(aggregate["n_judges"]) == {2}
    for _, shares in aggregate.groupby("model")["share"]:
        assert shares.dropna().sum() == pytest.approx(1.0)


def test_the_report_page_shows_the_shares_the_figure_and_the_downloads(
    repeated_job, researcher_client
):
    page = researcher_client.get(reverse("jury:report", args=[repeated_job.pk])).content.decode()

    assert 'id="variance-table"' in page and 'id="figure-variance"' in page
    assert "Where the spread comes from" in page
    assert "3 cases, 9 conversations, 2 judges" in squashed(page)
    assert reverse("jury:report_export", args=[repeated_job.pk, "variance", "csv"]) in page
    export = researcher_client.get(
        reverse("jury:report_export", args=[repeated_job.pk, "variance", "csv"])
    )
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert {row["component"] for row in rows} == set(COMPONENTS)
    figure = researcher_client.get(
        reverse("jury:report_figure", args=[repeated_job.pk, "variance", "pdf"])
    )
    assert figure.status_code == 200 and figure.content.startswith(b"%PDF")
    api = researcher_client.get(f"/api/v1/scoring-jobs/{repeated_job.pk}/tables/variance")
    assert api.status_code == 200 and {"variance", "share"} <= set(api.json()["columns"])
    assert {"estimate", "low", "high"} == set(api.json()["rows"][0]["share"])


def test_the_plan_prices_conversations_and_judges_from_the_earlier_runs_tokens(repeated_job):
    run = repeated_job.run
    for model in (*MODELS, run.patient_model, run.roster_model, *juries.DEMO_JUDGES):
        price_set(model=model, input_per_million=Decimal(2), output_per_million=Decimal(8))
    report = Report(repeated_job)

    costs, unpriced = planning.run_costs(report)

    def cost(calls) -> float:
        return sum(2 * call.input_tokens + 8 * call.output_tokens for call in calls) / 1e6

    calls = ModelCall.objects.filter(run=run)
    conversations = run.conversations.count()
    # Each agent pays its own agent and patient calls; the rosters (each written by whichever
    # conversation of its case came first) are spread over every conversation.
    rosters = cost(calls.filter(purpose="roster")) / conversations
    assert rosters > 0
    for agent in run.agents.all():
        played = calls.filter(conversation__run_agent=agent, purpose__in=("patient", "assistant"))
        mine = cost(played) / run.conversations.filter(run_agent=agent).count()
        assert costs[agent.label].conversation == pytest.approx(mine + rosters)
    scores = JudgeScore.objects.filter(job=repeated_job)
    judged = sum(2 * s.input_tokens + 8 * s.output_tokens for s in scores) / 1e6
    assert next(iter(costs.values())).judge == pytest.approx(judged / conversations / 2)
    assert unpriced == []


def test_the_plan_reaches_the_target_it_was_asked_for(repeated_job):
    result = planning.run_plan(repeated_job, half_width=0.5, what_if=(40, 2, 3))

    labels = [plan.model for plan in result.models]
    assert len(labels) == 2 and all(label.endswith("(scripted, not a model)") for label in labels)
    for plan in result.models:
        assert plan.as_run.cases == 3 and plan.as_run.judges == 2
        assert (plan.what_if.cases, plan.what_if.repetitions, plan.what_if.judges) == (40, 2, 3)
        for found in plan.plans:
            assert found.half_width <= 0.5 + 1e-9
            fewer = (found.cases - 1, found.repetitions, found.judges)
            error = decision.error_variance(plan.components, *fewer)
            assert found.cases == 1 or decision.Z * error**0.5 > 0.5


def test_the_plan_page_plans_from_the_newest_run_and_links_to_the_launch_form(
    repeated_job, researcher_client, admin_client
):
    set_id = repeated_job.run.benchmark_set_id

    default = researcher_client.get(reverse("jury:plan"), {"set": set_id}).content.decode()
    assert 'id="plan-result"' in default and "The earlier run" in default
    # The scripted judges differ by a constant: only a loose target is within reach.
    query = {"set": set_id, "job": repeated_job.pk, "measure": "aggregate", "target": "half_width"}
    page = researcher_client.get(reverse("jury:plan"), query | {"half_width": 1, "goal": 0.8})
    page = page.content.decode()

    assert "Cheapest" in page and "Predicted cost" in page
    launch = f"{reverse('benchmark:run_new')}?benchmark_set={set_id}&amp;repetitions="
    assert launch in page
    form = admin_client.get(
        reverse("benchmark:run_new"), {"benchmark_set": set_id, "repetitions": 5}
    ).content.decode()
    assert 'name="repetitions" value="5"' in form
    assert reverse("jury:plan") in form


def test_the_plan_page_says_what_is_wrong_with_a_target(repeated_job, researcher_client):
    query = {"job": repeated_job.pk, "measure": "aggregate", "target": "coefficient", "goal": "1.5"}

    page = researcher_client.get(reverse("jury:plan"), query).content.decode()

    assert 'id="plan-result"' not in page
    assert "Ensure this value is less than or equal to 0.99" in page


def test_the_plan_page_without_a_scored_run_says_what_to_do(researcher_client):
    page = researcher_client.get(reverse("jury:plan")).content.decode()

    assert 'id="plan-empty"' in page and "score a small pilot run first" in squashed(page)
