"""Ablations in one click: the full pipeline, four stages left out and the direct baseline,
then coverage (tested against the full pipeline's) and sensitivity for each."""

import json

import pytest
from django.urls import reverse

from jobs.models import JobStatus
from rubric_lab.models import AblationVariant
from rubric_lab.services import ablations, coverage, pipeline, sensitivity

pytestmark = pytest.mark.django_db


def run_sensitivity(study):
    for pair_id, token in study.pairs.values_list("pk", "lease_token"):
        sensitivity.near_miss_execute(pair_id, token or None)


def run_coverage(run):
    for case_id, token in run.cases.values_list("pk", "lease_token"):
        coverage.coverage_case_execute(case_id, token or None)


def test_the_six_variants_end_side_by_side_with_coverage_and_sensitivity(
    played_run, researcher_client
):
    study = ablations.ablation_launch(
        run=played_run, generator_model="offline/standard", judge_model="offline/standard",
        perturber_model="offline/surgical", reference_model="offline/careful", max_cases=1,
    )  # fmt: skip
    arms = list(study.arms.all())
    assert {arm.variant for arm in arms} == set(AblationVariant.values)
    assert {arm.generation_job.skip_intent for arm in arms} == {True, False}
    by_variant = {arm.variant: arm.generation_job for arm in arms}
    assert by_variant[AblationVariant.NO_FACTS].skip_facts
    assert by_variant[AblationVariant.DIRECT].method == "direct"
    (conversation,) = {g.conversation for arm in arms for g in arm.generation_job.generations.all()}
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json",
        content=json.dumps([{"case": conversation.entry.index,
                             "criterion": "Tells the patient when to call 911"}]),
    )  # fmt: skip
    for arm in arms:
        for generation_id in arm.generation_job.generations.values_list("pk", flat=True):
            pipeline.generation_execute(generation_id)

    still_running = ablations.ablation_advance(
        study, start_sensitivity=run_sensitivity, start_coverage=run_coverage
    )
    assert not still_running
    study.refresh_from_db()
    assert study.status == JobStatus.FINISHED
    rows = ablations.ablation_rows(study)
    assert len(rows) == 6
    for row in rows:
        assert row["rubrics"] == 1 and row["sensitivity"] is not None
        assert row["coverage"] is not None and row["coverage"].micro.constraints >= 1
        if row["arm"].variant == AblationVariant.FULL:
            assert row["versus_full"] is None
        else:  # the same expert criteria, one shared decomposition: every constraint paired
            assert row["versus_full"].test.pairs == row["coverage"].micro.constraints
    page = researcher_client.get(reverse("rubric_lab:ablation", args=[study.pk])).content
    assert page.decode().count("full − variant") == 5  # each variant against the full one
