"""Rubric generations and near-miss pairs lost with a SIGKILLed worker are sent again by the
watch, on the embedded folder queue and on Redis.

As in test_worker_crash_recovery: a real worker takes the job's work from a real queue, is
killed while model calls are in flight, and a fresh worker is started; nothing is sent by
hand. The model is the local fake server answering every call after a delay (each pipeline
stage with the offline script's answer for that stage and case), slow enough that the kill
lands mid-work. Every unit ends finished, stored once.
"""

import pytest

from benchmark.models import ModelCall
from jobs.models import JobStatus
from rubric_lab.engine.pipeline import MODEL_STAGES, STAGES
from rubric_lab.models import GenerationStatus, JudgeSetup, NearMissStatus, PipelineStage
from rubric_lab.services import pipeline, sensitivity
from rubric_lab.services.knowledge import retriever_for
from tests.fakes.llm_server import running_fake_llm_server
from tests.rubric_lab.stage_server import StageServer, case_marker, scripted_answers
from tests.support.builders import enriched_set, launched_run, played
from tests.workers.test_worker_crash_recovery import environment_for, kill_mid_job_then_restart

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
STAGE_DELAY = 0.6
PAIRWISE_ANSWER = '{"better": "A", "explanation": "The first reply kept the safety advice."}'
# Perturbations with a deterministic edit on the offline careful assistant's traces: the only
# model calls of a pair are then the two pairwise verdicts.
KINDS = ["claim_without_tool_call", "add_prescriptive_directive"]


def refreshed_status(job) -> str:
    job.refresh_from_db()
    return job.status


def test_rubric_generations_lost_with_a_killed_worker_are_made_by_the_next_one(tmp_path, transport):
    run = played(launched_run(enriched_set(name="crash rubrics", size=2, sampler_seed=5)))
    conversations = list(run.conversations.scorable())
    answers = {}
    for conversation in conversations:
        case = pipeline.case_of(conversation)
        answers[case_marker(case)] = scripted_answers(case, retriever_for("bm25"))
    assert len(answers) == len(conversations)  # each case is told apart by its marker
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="openai-compatible/slow-writer",
        run=run, use_cache=False,
    )  # fmt: skip
    server = StageServer(answers, delay_seconds=STAGE_DELAY).start()
    try:
        kill_mid_job_then_restart(
            tmp_path, transport, environment_for(tmp_path, transport, server),
            kind="rubric_generation", job_id=job.pk,
            started=lambda: PipelineStage.objects.filter(generation__job=job).exists(),
            done=lambda: refreshed_status(job) == JobStatus.FINISHED,
        )  # fmt: skip
    finally:
        server.stop()

    generations = list(job.generations.all())
    assert {g.status for g in generations} == {GenerationStatus.FINISHED}
    for generation in generations:
        # One pipeline's worth of stages each: the dead worker's partial attempt left no stage
        # behind, and no generation was finished twice. Its answers are accounted all the same
        # (written as they came): at least one pipeline's worth of calls each.
        assert sorted(generation.stages.values_list("name", flat=True)) == sorted(STAGES)
        assert generation.rubric.criteria.exists()
        calls = ModelCall.objects.filter(conversation=generation.conversation)
        assert calls.filter(purpose__startswith="rubric_").count() >= len(MODEL_STAGES)
        assert generation.lease_token == ""
    # The kill cost work: some stage was asked again by the second worker; every call
    # accounted was asked (those in flight at the kill were never answered).
    accounted = ModelCall.objects.filter(run=run, purpose__startswith="rubric_").count()
    assert len(MODEL_STAGES) * len(generations) < accounted <= len(server.requests)


def test_near_miss_pairs_lost_with_a_killed_worker_are_judged_by_the_next_one(tmp_path, transport):
    run = played(launched_run(enriched_set(name="crash study", size=2, sampler_seed=5)))
    study = sensitivity.study_launch(
        run=run, setup=JudgeSetup.PAIRWISE, judge_model="openai-compatible/slow-judge",
        perturber_model="offline/surgical", perturbations=KINDS, use_cache=False,
    )  # fmt: skip
    with running_fake_llm_server(delay_seconds=STAGE_DELAY, default_text=PAIRWISE_ANSWER) as server:
        kill_mid_job_then_restart(
            tmp_path, transport, environment_for(tmp_path, transport, server),
            kind="sensitivity", job_id=study.pk,
            started=lambda: len(server.requests) > 0,
            done=lambda: refreshed_status(study) == JobStatus.FINISHED,
        )  # fmt: skip
        asked = len(server.requests)

    pairs = list(study.pairs.all())
    assert len(pairs) == 2 * len(KINDS)
    assert {p.status for p in pairs} <= {NearMissStatus.SCORED, NearMissStatus.NOT_APPLICABLE}
    scored = [p for p in pairs if p.status == NearMissStatus.SCORED]
    assert any(p.method == "deterministic" for p in scored)
    for pair in scored:
        assert set(pair.details) == {"reference_as_A", "reference_as_B"}
        assert pair.lease_token == ""
        if pair.method == "deterministic":
            # Its spend counts every verdict it was given (11 in / 7 out each at the fake): the
            # two of the attempt stored, and any the dead worker's attempt was answered.
            calls = sum(row["calls"] for row in pair.model_costs.values())
            assert calls >= 2 and (pair.input_tokens, pair.output_tokens) == (11 * calls, 7 * calls)
    assert asked > 2 * len(scored)  # a verdict in flight when the worker died was asked again
    assert sensitivity.study_results(study)[-1]["sensitivity"].n == len(scored)
