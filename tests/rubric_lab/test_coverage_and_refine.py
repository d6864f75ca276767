"""Coverage (CIA) and critique-then-refine through the services, offline."""

import json

import pytest

from jobs.models import JobStatus
from rubric_lab.engine import coverage, coverage_stats, refine
from rubric_lab.models import ExpertCriterion, RefineArm, WorkStatus
from rubric_lab.services import coverage as coverage_service
from rubric_lab.services import pipeline
from rubric_lab.services import refine as refine_service
from tests.rubric_lab.evaluation_traces import PROFILE, urgent_trace

pytestmark = pytest.mark.django_db


def rubric_job(run, count=1):
    conversations = list(run.conversations.filter(run_agent__model="offline/careful")[:count])
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard"
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    return job


def test_coverage_figures_are_recall_precision_and_f1():
    judgements = [
        {"entailed": True, "criteria": [1, 2]},
        {"entailed": False, "criteria": []},
        {"entailed": True, "criteria": [2]},
        {"entailed": False, "criteria": []},
    ]
    result = coverage.coverage_of(judgements, generated=5)
    assert (result.recall, result.precision) == (0.5, 0.4)
    assert result.f1 == pytest.approx(2 * 0.5 * 0.4 / 0.9)
    overall = coverage_stats.overall([result, coverage_stats.Coverage(2, 2, 2, 2)])
    assert overall.micro.recall == 4 / 6 and overall.macro_recall == 0.75


def test_entailment_answers_that_contradict_themselves_are_refused():
    bad = {"judgements": [{"constraint": 1, "entailed": True, "criteria": []}]}
    with pytest.raises(coverage.InvalidOutput, match="names the criteria"):
        coverage.validate_judgements(bad, constraints=1, generated=3)
    with pytest.raises(coverage.InvalidOutput, match="were not judged"):
        coverage.validate_judgements({"judgements": []}, constraints=2, generated=3)


def test_an_upload_with_bad_rows_names_each_and_saves_nothing(played_run):
    content = "case,criterion,weight\n0,Advises 911 for chest pain,5\n99,Unknown case,3\n0,,x\n"
    with pytest.raises(coverage_service.UploadError) as caught:
        coverage_service.expert_criteria_upload(
            benchmark_set=played_run.benchmark_set, filename="gold.csv", content=content
        )
    assert [e.split(":")[0] for e in caught.value.errors] == ["row 3", "row 4"]
    assert "weight must be" in caught.value.errors[1]
    assert not ExpertCriterion.objects.exists()


def test_a_coverage_run_scores_each_case_with_expert_criteria(played_run):
    job = rubric_job(played_run)
    entry = job.generations.get().conversation.entry
    criteria = [{"case": entry.index, "criterion": c["text"]} for c in
                job.generations.get().rubric.criteria.values("text")[:2]]  # fmt: skip
    criteria.append({"case": entry.index, "criterion": "Explains how to book a dental cleaning"})
    coverage_service.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json", content=json.dumps(criteria)
    )
    run = coverage_service.coverage_launch(generation_job=job, judge_model="offline/standard")
    for case_id in run.cases.values_list("pk", flat=True):
        coverage_service.coverage_case_execute(case_id)
    run.refresh_from_db()

    assert run.status == JobStatus.FINISHED
    (row, figures) = coverage_service.coverage_results(run)["cases"][0]
    assert row.status == WorkStatus.DONE and figures.constraints >= 3
    assert 0 < figures.recall < 1 and figures.matched >= 2


def test_the_editor_may_not_add_a_medicine_a_dose_or_a_diagnosis():
    plan = [{"priority": 1, "event_id": "e6", "criterion": None, "instruction": "x"}]
    content = ("I've sent your message to Dr Kim. Take ibuprofen 400 mg now. This is definitely "
               "an infection.")  # fmt: skip
    problems = refine.edit_violations(
        [{"event_id": "e6", "content": content}, {"event_id": "e2", "content": "Hi."}],
        events=urgent_trace(), profile=PROFILE, plan=plan,
    )  # fmt: skip
    text = " ".join(problems)
    assert "'ibuprofen'" in text and "'400 mg'" in text and "diagnosis" in text
    assert "e2: edits a message the plan did not name" in problems


def test_refinement_compares_the_rubric_arm_with_self_critique(played_run):
    job = rubric_job(played_run, count=2)
    study = refine_service.refine_launch(
        generation_job=job, evaluator_model="offline/standard", editor_model="offline/standard",
        judge_model="offline/strict",
    )  # fmt: skip
    for pk in study.refinements.values_list("pk", flat=True):
        refine_service.refinement_execute(pk)
    study.refresh_from_db()

    assert study.status == JobStatus.FINISHED
    # No expert criteria: no oracle arm, and nothing scored against them.
    assert study.refinements.filter(status=WorkStatus.DONE).count() == 4
    assert not study.refinements.filter(arm=RefineArm.ORACLE).exists()
    results = refine_service.refine_results(study)
    assert set(results["arms"]) == set(RefineArm.values)
    assert results["arms"]["oracle"]["done"] == 0 and results["arms"]["rubric"]["done"] == 2
    assert results["difference"] is not None
    assert results["arms"]["rubric"]["expert_gain"] is None


def test_the_oracle_arm_critiques_with_the_expert_criteria_and_every_arm_is_scored_on_them(
    played_run,
):
    job = rubric_job(played_run)
    rubric = job.generations.get().rubric
    coverage_service.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json",
        content=json.dumps([
            {"conversation": str(rubric.conversation.public_id), "axis": "communication_quality",
             "criterion": "Acknowledges how the patient feels before giving advice", "weight": 4},
            {"conversation": str(rubric.conversation.public_id), "axis": "accuracy",
             "criterion": "Tells the patient to call 911 if symptoms get worse", "weight": 8},
        ]),
    )  # fmt: skip
    study = refine_service.refine_launch(
        generation_job=job, evaluator_model="offline/standard", editor_model="offline/standard",
        judge_model="offline/strict", criteria_judge_model="offline/standard",
    )  # fmt: skip
    for pk in study.refinements.values_list("pk", flat=True):
        refine_service.refinement_execute(pk)

    oracle = study.refinements.get(arm=RefineArm.ORACLE)
    assert oracle.status == WorkStatus.DONE and oracle.plan  # the criteria it lacks, planned
    critique = oracle.plan[0]
    assert critique["criterion"] in (1, 2)
    for row in study.refinements.all():
        assert row.original_expert_score is not None and row.refined_expert_score is not None
        assert set(row.expert_axes) == {"communication_quality", "accuracy"}
    results = refine_service.refine_results(study)
    assert results["arms"]["oracle"]["expert_gain"].value >= 0
    assert set(results["arms"]["oracle"]["axes"]) == {"accuracy", "communication_quality"}
    labels = [d["label"] for d in results["differences"]]
    assert (
        labels[1]
        == "Critique with the instance rubric - Critique with the expert criteria (oracle)"
    )
    table = refine_service.refine_table(study)
    assert "expert criteria, axis accuracy" in set(table["measure"])


def test_an_overreaching_editor_is_rejected_with_its_violations(played_run):
    job = rubric_job(played_run)
    study = refine_service.refine_launch(
        generation_job=job, evaluator_model="offline/standard", editor_model="offline/overreach",
        judge_model="offline/standard",
    )  # fmt: skip
    for pk in study.refinements.values_list("pk", flat=True):
        refine_service.refinement_execute(pk)

    rejected = study.refinements.filter(status=WorkStatus.REJECTED)
    assert rejected.exists()
    for row in rejected:
        assert row.failure_stage == "edit" and any("diagnosis" in v for v in row.violations)
        assert row.refined_score is None
