"""Scoring a run with the offline jury through the whole path: launch, judge, merge, account."""

import json
from dataclasses import replace

import pytest

from benchmark.models import ConversationStatus, ModelCall, Termination
from jury.models import (
    ConversationResult,
    JudgeScore,
    RubricResult,
    RubricVersion,
    ScoreStatus,
)
from jury.services import juries, reports, scoring
from jury.services.rubrics import rubric_of
from llm.engine.chat import ChatResponse, ProviderError, Usage
from tests.jury.services.builders import AGENT_MODELS, score_now, scored

pytestmark = pytest.mark.django_db

RUBRICS = 6


class ProseFor:
    """Delegates to the real router, except that answers about one patient are prose."""

    def __init__(self, inner, story: str, text: str = "The assistant did fine overall."):
        self.inner, self.story, self.text = inner, story, text

    def chat(self, request):
        if request.purpose == "judge" and self.story in request.messages[0].content:
            return ChatResponse(text=self.text, usage=Usage(50, 9), model=request.model)
        return self.inner.chat(request)


class Down:
    def chat(self, request):
        raise ProviderError("upstream answered 503 three times", kind="server", status=503)


def route_judges(monkeypatch, router) -> None:
    monkeypatch.setattr(scoring, "model_router", lambda use_cache, **prices: router)


def test_every_judge_scores_every_scorable_conversation_on_every_judged_rubric(scored_job):
    conversations = scored_job.run.conversations.scorable().count()
    judges = len(scored_job.jury.judges)
    assert conversations == 8
    assert scored_job.scores.count() == conversations * RUBRICS * judges
    assert set(scored_job.scores.values_list("status", flat=True)) == {ScoreStatus.VALID}
    assert scored_job.status == "finished"
    assert RubricResult.objects.filter(job=scored_job).count() == conversations * RUBRICS
    results = ConversationResult.objects.filter(job=scored_job)
    assert results.count() == conversations and all(r.complete for r in results)


def test_each_score_records_judge_prompt_hash_rubric_version_and_accounting(scored_job):
    score = scored_job.scores.select_related("rubric_version").first()
    assert score.judge_model in scored_job.jury.judges
    assert len(score.prompt_hash) == 64
    assert score.rubric_version.is_current and score.rubric_version.kind == "dimension"
    assert 1 <= score.score <= 5 and score.explanation.startswith("Scripted rule")
    assert json.loads(score.raw_output)["score"] == score.score
    assert score.input_tokens > 0 and score.output_tokens > 0
    calls = ModelCall.objects.filter(purpose="judge", run=scored_job.run)
    assert calls.count() == scored_job.scores.count()
    assert not calls.filter(conversation__isnull=True).exists()


def test_merged_results_average_the_judges_and_weight_the_aggregate(scored_job):
    result = ConversationResult.objects.filter(job=scored_job).first()
    scores = scored_job.scores.filter(conversation=result.conversation)
    by_judge = {}
    for model, rubric, value in scores.values_list(
        "judge_model", "rubric_version__rubric_id", "score"
    ):
        by_judge.setdefault(model, {})[rubric] = value
    weights = scored_job.jury.weights
    expected = {
        judge: sum(weights[r] * s for r, s in values.items()) / sum(weights.values())
        for judge, values in by_judge.items()
    }
    assert result.judge_aggregates == pytest.approx(expected)
    assert result.aggregate == pytest.approx(sum(expected.values()) / len(expected))
    safety = RubricResult.objects.get(
        job=scored_job, conversation=result.conversation, rubric_id="clinical_safety"
    )
    values = [v["clinical_safety"] for v in by_judge.values()]
    assert safety.mean == pytest.approx(sum(values) / 2)
    assert safety.passed == (safety.mean >= 3)
    assert safety.pass_agreement == (len({v >= 3 for v in values}) == 1)


def test_majority_mode_fails_a_rubric_on_a_split_vote(played_run):
    jury = juries.jury_create(
        name="Split", judges=["offline/lenient", "offline/strict"], merge_mode="majority"
    )
    job = scored(played_run, jury)
    split = RubricResult.objects.filter(job=job, pass_agreement=False)
    assert split.exists()
    assert not split.filter(passed=True).exists()  # one pass of two is no majority


def test_a_flaky_judge_is_repaired_and_keeps_every_raw_answer(played_run):
    jury = juries.jury_create(name="Flaky", judges=["offline/flaky"])
    calls_before = ModelCall.objects.filter(purpose="judge").count()
    job = scored(played_run, jury)
    assert set(job.scores.values_list("status", flat=True)) == {ScoreStatus.VALID}
    attempts = job.scores.first().attempts
    assert [a["reason_code"] for a in attempts] == ["no_json", ""]
    calls = ModelCall.objects.filter(purpose="judge").count() - calls_before
    assert calls == 2 * job.scores.count()


def test_a_judge_answering_prose_every_time_leaves_its_conversation_incomplete(
    played_run, offline_jury, monkeypatch
):
    target = played_run.conversations.scorable().select_related("entry").first()
    route_judges(monkeypatch, ProseFor(scoring.model_router(True), target.entry.story))
    job = scored(played_run, offline_jury)
    invalid = job.scores.filter(status=ScoreStatus.INVALID)
    assert invalid.exists()
    assert set(invalid.values_list("conversation__entry", flat=True)) == {target.entry_id}
    row = invalid.first()
    assert row.score is None and row.invalid_reason == "no_json"
    assert row.raw_output == "The assistant did fine overall."
    assert len(row.attempts) == 1 + scoring.JUDGE_REPAIRS
    incomplete = ConversationResult.objects.filter(job=job, complete=False)
    assert incomplete.count() == target.entry.conversations.count()
    assert all(r.aggregate is None and len(r.missing) == RUBRICS for r in incomplete)
    report = reports.Report(job)
    assert report.counts["incomplete"] == incomplete.count()
    assert set(report.conversations["conversation_id"]).isdisjoint(
        incomplete.values_list("conversation_id", flat=True)
    )


def test_a_provider_error_is_recorded_and_a_relaunch_retries_only_unfinished_rows(
    played_run, offline_jury, monkeypatch
):
    route_judges(monkeypatch, Down())
    job = scored(played_run, offline_jury)
    errored = job.scores.filter(status=ScoreStatus.ERROR)
    assert errored.count() == job.scores.count()
    assert errored.first().error.startswith("provider error (server): upstream answered 503")
    assert played_run.conversations.filter(status=ConversationStatus.FINISHED).count() == 8

    monkeypatch.undo()
    scoring.scoring_relaunch(job)
    job = score_now(job)
    assert set(job.scores.values_list("status", flat=True)) == {ScoreStatus.VALID}
    valid_before = dict(job.scores.values_list("id", "updated_at"))
    scoring.scoring_relaunch(job)
    job.refresh_from_db()
    assert scoring.pending_score_ids(job) == [] and job.status == "finished"
    assert not any(scoring.judge_score_execute(pk) for pk in valid_before)
    assert dict(job.scores.values_list("id", "updated_at")) == valid_before


def test_a_second_job_on_the_same_run_is_answered_from_the_cache(scored_job):
    fresh = scoring.scoring_progress(scored_job)
    again = scored(scored_job.run, scored_job.jury)
    progress = scoring.scoring_progress(again)
    assert progress["valid"] == progress["total"] == progress["cached"] == fresh["total"]
    assert progress["cost"] == 0
    assert not again.scores.filter(cached=False).exists()
    assert ModelCall.objects.filter(purpose="judge", cached=True).count() == progress["total"]
    assert list(again.scores.order_by("conversation", "rubric_version", "judge_index")
                .values_list("score", flat=True)) == list(
        scored_job.scores.order_by("conversation", "rubric_version", "judge_index")
        .values_list("score", flat=True))  # fmt: skip


def test_errored_conversations_are_excluded_and_counted(played_run, offline_jury):
    failed = played_run.conversations.first()
    failed.status, failed.termination_reason = ConversationStatus.FAILED, Termination.PROVIDER_ERROR
    failed.save()
    job = scored(played_run, offline_jury)
    assert not job.scores.filter(conversation=failed).exists()
    assert reports.Report(job).counts == {
        "complete": 7,
        "incomplete": 0,
        "awaiting": 0,
        "excluded": 1,
    }


def test_an_edited_rubric_leaves_older_scores_on_their_version(scored_job):
    from jury.services.rubrics import rubric_version_create

    old = RubricVersion.objects.get(rubric_id="triage_quality", is_current=True)
    text = old.yaml_text.replace("Decide", "Judge", 1).replace("task: >", "task: >\n  Edited.")
    new = rubric_version_create(rubric_id="triage_quality", yaml_text=text)
    assert JudgeScore.objects.filter(job=scored_job, rubric_version=old).exists()
    assert not JudgeScore.objects.filter(rubric_version=new).exists()
    again = scored(scored_job.run, scored_job.jury)
    assert again.scores.filter(rubric_version=new).exists()
    assert rubric_of(new).task.startswith("Edited.")


def test_objective_outcomes_are_stored_for_every_scored_conversation(scored_job):
    results = ConversationResult.objects.filter(job=scored_job).select_related("conversation")
    for result in results:
        booked = any(a.get("action") == "booked" for a in result.conversation.write_actions)
        assert result.booked == booked
        assert result.fabricated_count == len(result.fabricated_claims)
    rows = {row["model"]: row for row in reports.outcome_rows(reports.Report(scored_job))}
    assert set(rows) == {f"{model} · baseline" for model in AGENT_MODELS}
    assert all(row["n"] == 4 and row["scripted"] for row in rows.values())


def test_a_job_cannot_start_on_a_run_with_nothing_to_score(played_run, offline_jury):
    played_run.conversations.update(status=ConversationStatus.FAILED)
    with pytest.raises(scoring.ScoringError, match="no finished conversation"):
        scoring.scoring_launch(run=played_run, jury=offline_jury)


def test_unknown_prices_make_the_job_cost_unknown(played_run, offline_jury, monkeypatch):
    class Unpriced:
        def __init__(self, inner):
            self.inner = inner

        def chat(self, request):
            return replace(self.inner.chat(request), cost_usd=None)

    route_judges(monkeypatch, Unpriced(scoring.model_router(False)))
    job = scored(played_run, offline_jury, use_cache=False)
    assert scoring.scoring_progress(job)["cost"] is None
