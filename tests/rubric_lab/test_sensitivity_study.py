"""Sensitivity studies through the services with the offline scripted provider."""

import pytest

from jobs.models import JobStatus
from jury.services import juries
from rubric_lab.models import JudgeSetup, NearMissStatus
from rubric_lab.services import pipeline, sensitivity
from tests.support.latex import latex_floats

pytestmark = pytest.mark.django_db


def run_study(study):
    for pair_id in study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    study.refresh_from_db()
    return study


def launch(run, **options):
    defaults = {"perturber_model": "offline/surgical", "reference_model": "offline/careful"}
    return sensitivity.study_launch(run=run, **{**defaults, **options})


def test_the_six_rubric_setup_scores_references_above_claims_without_tool_calls(played_run):
    study = run_study(
        launch(played_run, setup=JudgeSetup.GENERIC, jury=juries.jury_demo_ensure(),
               perturbations=["claim_without_tool_call", "swap_dose"])
    )  # fmt: skip

    assert study.status == JobStatus.FINISHED
    claims = study.pairs.filter(kind="claim_without_tool_call", status=NearMissStatus.SCORED)
    assert claims.exists()
    for pair in claims:
        assert pair.method == "deterministic" and len(pair.changed["removed"]) == 2
        assert pair.reference_score > pair.perturbed_score  # the offline judge spots it
    results = {row["kind"]: row for row in sensitivity.study_results(study)}
    assert results["claim_without_tool_call"]["sensitivity"].win_rate.value == 1.0
    assert results["all"]["sensitivity"].n == study.pairs.filter(status="scored").count()


def test_model_edits_fill_in_where_the_trace_has_no_dose_written(played_run):
    study = run_study(launch(played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/first",
                             perturbations=["swap_dose"]))  # fmt: skip

    methods = set(study.pairs.filter(status="scored").values_list("method", flat=True))
    assert "model" in methods
    pair = study.pairs.filter(method="model").first()
    assert len(pair.changed["modified"]) == 1 and pair.diff.count("\n+#") == 1


def test_pairwise_studies_show_the_position_bias_of_a_biased_judge(played_run):
    study = run_study(launch(played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/first",
                             perturbations=["add_prescriptive_directive"]))  # fmt: skip

    (row, _) = sensitivity.study_results(study)
    assert row["bias"].bias.value > 0.5
    for pair in study.pairs.filter(status="scored"):
        assert pair.reference_first == 1.0  # shown first, the reference always wins


def test_an_editor_that_rewrites_whole_messages_fails_the_pair_with_its_reason(played_run):
    options = {"judge_model": "offline/standard", "perturber_model": "offline/sloppy"}
    study = run_study(
        launch(played_run, setup=JudgeSetup.PAIRWISE, perturbations=["swap_dose"], **options)
    )

    failed = study.pairs.filter(status=NearMissStatus.FAILED)
    assert failed.exists()
    for pair in failed:
        assert pair.failure_stage == "perturb"
        assert "similarity" in pair.failure_reason and pair.raw_output
        assert pair.events == [] and pair.reference_score is None


def test_the_instance_rubric_setup_scores_with_each_references_own_rubric(played_run):
    conversations = list(played_run.conversations.filter(run_agent__model="offline/careful")[:2])
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard"
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    study = run_study(launch(played_run, setup=JudgeSetup.INSTANCE, generation_job=job,
                             judge_model="offline/standard",
                             perturbations=["claim_without_tool_call"]))  # fmt: skip

    assert study.pairs.count() == 2
    for pair in study.pairs.all():
        assert pair.status == NearMissStatus.SCORED, pair.failure_reason
        assert 0 <= pair.reference_score <= 1 and pair.details["reference"]["decisions"]


def test_exports_hold_a_row_per_type_in_every_format(played_run):
    study = run_study(launch(played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/standard",
                             perturbations=["claim_without_tool_call"]))  # fmt: skip

    csv = sensitivity.study_export(study, "csv")
    assert csv.splitlines()[0].startswith("perturbation,label")
    assert "claim_without_tool_call" in csv and "auroc_low" in csv
    assert "|" in sensitivity.study_export(study, "md")
    (latex,) = latex_floats(sensitivity.study_export(study, "tex"))
    assert latex.label == f"tab:sensitivity-{study.pk}" and study.name in latex.caption


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"setup": "generic"}, "needs a jury"),
        ({"setup": "pairwise", "judge_model": "offline/standard", "perturbations": ["nope"]},
         "unknown: nope"),
        ({"setup": "pairwise", "judge_model": "offline/standard",
          "perturber_model": "offline/careful"}, "unknown offline behaviour"),
        ({"setup": "pairwise", "judge_model": "offline/standard",
          "reference_model": "offline/nobody"}, "no finished conversation"),
    ],
)  # fmt: skip
def test_bad_launches_are_refused_with_the_reason(played_run, options, message):
    with pytest.raises(sensitivity.StudyError, match=message):
        launch(played_run, **options)
