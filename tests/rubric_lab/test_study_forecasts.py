"""The lab's evaluation launches are forecast stage by stage from an earlier study of the same
kind (rubric_lab.services.study_forecasts), by a dry launch that keeps nothing."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.models import ModelCall
from jury.services import juries
from llm.models import ModelPrice
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    GenerationJob,
    JudgeSetup,
    NearMiss,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import ablations, instance_scoring, refine, sensitivity
from rubric_lab.services import study_forecasts as forecasts
from tests.rubric_lab.test_coverage_and_refine import rubric_job

pytestmark = pytest.mark.django_db

PAIRWISE = {
    "setup": JudgeSetup.PAIRWISE,
    "judge_model": "offline/first",
    "perturber_model": "offline/surgical",
    "reference_model": "offline/careful",
    "perturbations": ["swap_dose", "add_prescriptive_directive"],
}


def sensitivity_launch(run, **options):
    return lambda: sensitivity.study_launch(run=run, **{**PAIRWISE, **options})


def played(study, execute, units):
    for pk in units.values_list("pk", flat=True):
        execute(pk)
    return study


def accounted_calls(units) -> int:
    """The calls the units' own ledgers counted (jobs.services.accounting), every model."""
    return sum(row["calls"] for costs in units.values_list("model_costs", flat=True)
               for row in costs.values())  # fmt: skip


@pytest.fixture
def pilot(played_run):
    study = sensitivity_launch(played_run, name="Pilot")()
    return played(study, sensitivity.near_miss_execute, study.pairs.all())


def test_a_sensitivity_forecast_matches_what_the_pilot_really_called(pilot, played_run):
    result = forecasts.launch_forecast(sensitivity_launch(played_run))

    assert f"sensitivity study {pilot.pk} 'Pilot'" in result.source
    roles = {role.role: role for role in result.roles}
    assert list(roles) == ["stage: perturb", "stage: pairwise judging"]
    assert {role.units for role in result.roles} == {pilot.pairs.count()}
    # The same launch again: N equals the n observed, so the estimate is the pilot's total.
    assert result.calls == pytest.approx(accounted_calls(pilot.pairs.all()))
    tokens = sum(role.figures["input_tokens"].estimate for role in result.roles)
    assert tokens == pytest.approx(sum(pilot.pairs.values_list("input_tokens", flat=True)))
    usage = pilot.pairs.values_list("purpose_usage", flat=True)
    judged = sum(unit.get("pairwise_judge", {}).get("calls", 0) for unit in usage)
    assert roles["stage: pairwise judging"].figures["calls"].estimate == pytest.approx(judged)
    assert result.cost is not None and result.cost.low is not None


def test_a_dry_run_keeps_nothing_and_calls_nothing(pilot, played_run):
    before = (SensitivityStudy.objects.count(), NearMiss.objects.count(), ModelCall.objects.count())

    forecasts.launch_forecast(sensitivity_launch(played_run, perturbations=["swap_dose"]))

    after = (SensitivityStudy.objects.count(), NearMiss.objects.count(), ModelCall.objects.count())
    assert after == before


def test_a_dry_run_refuses_what_the_launch_refuses(played_run):
    with pytest.raises(sensitivity.StudyError, match="no finished conversation|no reference"):
        forecasts.launch_forecast(sensitivity_launch(played_run, reference_model="offline/none"))


def test_a_priced_model_is_costed_with_an_interval_and_a_new_setup_is_unobserved(pilot):
    jury = juries.jury_demo_ensure()
    demands, _ = forecasts.sensitivity_demands(
        setup=JudgeSetup.GENERIC, kinds=["swap_dose"], pairs=40,
        perturber_model="openai/gpt-5-mini", jury=jury,
    )  # fmt: skip

    assert [d.role for d in demands] == [
        "stage: perturb",
        *(f"judge seat {n}" for n in range(1, len(jury.judges) + 1)),
    ]
    assert demands[0].observed and not demands[1].observed  # no earlier six-rubric study
    result = forecasts.forecast(demands, forecasts.catalog_in_force().price_for)
    perturb = result.roles[0]
    assert perturb.cost is not None and perturb.cost.low <= perturb.cost.estimate


def test_with_no_earlier_study_it_asks_for_a_pilot(played_run):
    result = forecasts.launch_forecast(sensitivity_launch(played_run))

    assert result.source == forecasts.no_source("sensitivity study")
    assert result.unobserved == ["stage: perturb", "stage: pairwise judging"]


def test_a_refine_forecast_matches_the_earlier_studys_accounting(played_run):
    job = rubric_job(played_run, count=2)
    models = {"evaluator_model": "offline/standard", "editor_model": "offline/standard",
              "judge_model": "offline/strict"}  # fmt: skip
    study = refine.refine_launch(generation_job=job, name="Pilot refine", **models)
    played(study, refine.refinement_execute, study.refinements.all())

    result = forecasts.launch_forecast(lambda: refine.refine_launch(generation_job=job, **models))

    names = [role.role for role in result.roles]
    assert names == ["stage: critique", "stage: edit", "stage: independent judge"]
    assert result.calls == pytest.approx(accounted_calls(study.refinements.all()))
    assert RefineStudy.objects.count() == 1


def test_an_ablation_forecasts_every_variant_and_keeps_nothing(played_run):
    counts = (AblationStudy.objects.count(), GenerationJob.objects.count())

    result = forecasts.launch_forecast(
        lambda: ablations.ablation_launch(
            run=played_run, generator_model="offline/standard", judge_model="offline/standard",
            perturber_model="offline/surgical", max_cases=2,
        )
    )  # fmt: skip

    names = [role.role for role in result.roles]
    assert sum(n.endswith("stage: synthesis") for n in names) == 5  # every pipeline variant
    assert any(n.endswith("stage: direct") for n in names)
    assert any(n.endswith("stage: instance judging") for n in names)
    assert (AblationStudy.objects.count(), GenerationJob.objects.count()) == counts
    assert CoverageRun.objects.count() == 0


def test_an_instance_score_is_forecast_per_criterion(played_run):
    job = rubric_job(played_run, count=2)
    first, second = [g.rubric for g in job.generations.select_related("rubric")]
    score = instance_scoring.instance_score_run_here(
        rubric=first, conversation=first.conversation, judge="offline/standard"
    )
    decisions = score.decisions.all()
    made = sum(len(d.attempts) for d in decisions)

    result = forecasts.score_forecast(
        rubric=second, conversation=second.conversation, judge_model="offline/standard"
    )

    (role,) = result.roles
    assert role.units == second.criteria.count()
    assert role.figures["calls"].estimate == pytest.approx(role.units * made / decisions.count())
    again = forecasts.score_forecast(
        rubric=first, conversation=first.conversation, judge_model="offline/standard"
    )
    assert again.roles[0].units == 0 and "nothing to call" in again.source


def test_the_commands_dry_run_prints_the_table_and_creates_nothing(pilot, played_run):
    out = io.StringIO()
    call_command(
        "lab_sensitivity", str(played_run.pk), "--setup", "pairwise", "--judge", "offline/first",
        "--perturbation", "swap_dose", "--reference-model", "offline/careful", "--dry-run",
        "--price", "offline/first=1,2", stdout=out,
    )  # fmt: skip

    text = out.getvalue()
    assert "stage: pairwise judging" in text and f"sensitivity study {pilot.pk}" in text
    assert "total cost: $" in text and "--price was not applied" in text
    assert SensitivityStudy.objects.count() == 1 and not ModelPrice.objects.exists()


def test_the_coverage_commands_dry_run_refuses_as_the_launch_does(played_run):
    job = rubric_job(played_run)
    with pytest.raises(CommandError, match="expert criteria"):
        call_command("lab_coverage", str(job.pk), "--judge", "offline/standard", "--dry-run")
