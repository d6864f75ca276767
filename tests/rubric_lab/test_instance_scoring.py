"""Scoring with an instance rubric: per-criterion decisions, cached and idempotent, stored
whole or not at all; and the transcript scorer for copies that exist only in memory."""

from dataclasses import replace

import pytest

from jury.services.scoring import scenario_of, trace_of
from llm.engine.providers.offline import OfflineProvider
from llm.engine.structured import StructuredFailure
from rubric_lab.models import CriterionDecision, InstanceScoreStatus
from rubric_lab.services import instance_scoring, pipeline

pytestmark = pytest.mark.django_db

JUDGE = "offline/standard"


@pytest.fixture
def rubric(played_run):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(conversations=[conversation], generator_model=JUDGE)
    generation = job.generations.get()
    pipeline.generation_execute(generation.pk)
    generation.refresh_from_db()
    return generation.rubric


def test_a_score_holds_one_decision_per_criterion_and_their_weighted_sum(rubric):
    score = instance_scoring.instance_score_run_here(
        rubric=rubric, conversation=rubric.conversation, judge=JUDGE
    )
    assert score.status == InstanceScoreStatus.VALID
    decisions = list(score.decisions.select_related("criterion"))
    assert len(decisions) == rubric.criteria.count()
    expected = sum(d.criterion.weight for d in decisions if d.met)
    assert score.weighted_sum == expected
    positive = sum(c.weight for c in rubric.criteria.all() if c.weight > 0)
    assert score.positive_total == positive
    assert score.normalised == pytest.approx(expected / positive)
    assert all(d.reason.startswith("Scripted rule") for d in decisions)


def test_scoring_again_is_idempotent(rubric):
    first = instance_scoring.instance_score_run_here(
        rubric=rubric, conversation=rubric.conversation, judge=JUDGE
    )
    again = instance_scoring.instance_score_launch(
        rubric=rubric, conversation=rubric.conversation, judge_model=JUDGE
    )
    assert again.pk == first.pk and again.status == InstanceScoreStatus.VALID
    assert not instance_scoring.instance_score_execute(again.pk)
    assert CriterionDecision.objects.filter(score=first).count() == rubric.criteria.count()


def test_a_second_scoring_of_the_same_transcript_is_answered_from_the_cache(rubric):
    conversation = rubric.conversation
    inputs = {
        "rubric": rubric, "profile": conversation.entry.profile,
        "scenario": scenario_of(conversation.entry), "events": trace_of(conversation),
        "judge_model": JUDGE, "sample": "cache-test",
    }  # fmt: skip
    first = instance_scoring.instance_rubric_score_trace(**inputs)
    second = instance_scoring.instance_rubric_score_trace(**inputs)
    assert [d.met for d in first.decisions] == [d.met for d in second.decisions]
    assert all(r.cached for d in second.decisions for r in d.responses)
    assert second.normalised == first.normalised


def test_the_trace_scorer_sees_a_changed_transcript(rubric):
    conversation = rubric.conversation
    events = trace_of(conversation)
    claim = {"event_id": "x1", "turn": 99, "kind": "assistant_message",
             "content": "I've booked your appointment for tomorrow.", "tool_name": "",
             "arguments": None, "ok": None}  # fmt: skip
    inputs = {"rubric": rubric, "profile": conversation.entry.profile,
              "scenario": scenario_of(conversation.entry), "judge_model": JUDGE}  # fmt: skip
    clean = instance_scoring.instance_rubric_score_trace(events=events, **inputs)
    without_tools = [e for e in events if e["kind"] not in ("tool_call", "tool_result")]
    claimed = instance_scoring.instance_rubric_score_trace(
        events=[*without_tools, claim], **inputs, sample="perturbed"
    )
    penalised = [c.criterion_id for c in rubric.criteria.all() if c.text.startswith("Claims")]
    assert penalised, "the scripted rubric penalises unbacked claims"
    assert claimed.weighted_sum < clean.weighted_sum
    met = {d.criterion_id: d.met for d in claimed.decisions}
    assert met[penalised[0]] is True


class Garbled:
    def __init__(self):
        self.offline = OfflineProvider("standard")

    def chat(self, request):
        response = self.offline.chat(request)
        if request.hints["criterion"]["text"].startswith("Asks"):
            return replace(response, text='{"met": "maybe", "reason": "unsure"}')
        return response


def test_one_unusable_decision_leaves_no_partial_score(rubric):
    conversation = rubric.conversation
    with pytest.raises(StructuredFailure, match=r"criterion \d+: .*true or false"):
        instance_scoring.instance_rubric_score_trace(
            rubric=rubric, profile=conversation.entry.profile,
            scenario=scenario_of(conversation.entry), events=trace_of(conversation),
            judge_model=JUDGE, client=Garbled(),
        )  # fmt: skip
    score = instance_scoring.instance_score_launch(
        rubric=rubric, conversation=conversation, judge_model=JUDGE
    )
    assert instance_scoring.instance_score_execute(score.pk, client=Garbled())
    score.refresh_from_db()
    assert score.status == InstanceScoreStatus.INVALID
    assert "true or false" in score.failure_reason
    assert score.weighted_sum is None and not score.decisions.exists()
    retried = instance_scoring.instance_score_launch(
        rubric=rubric, conversation=conversation, judge_model=JUDGE
    )
    assert retried.status == InstanceScoreStatus.PENDING
