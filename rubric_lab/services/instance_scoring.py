"""Scoring with an instance rubric: one judge decision (met / not met, with a reason) per
criterion, then the weighted and normalised score (rubric_lab.engine.rubric).

Each criterion is one model call (purpose "rubric_judge", prompt rubric_lab/data/prompts/
judge.md) through the provider layer with one repair turn, so decisions are independent and
cached: the cache key holds the criterion, the transcript and the sample, so scoring the same
transcript again replays the answers for free, and an answer that failed validation is
forgotten. A score is stored whole or not at all: if any criterion's decision is unusable
the score is invalid (or a provider error) with its reason, never a partial sum.

`instance_rubric_score_trace` scores any transcript (a stored conversation or a perturbed
copy that exists only in memory); `instance_score_execute` is the stored, leased,
idempotent form for a Conversation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmark.models import Conversation, ModelCall
from jobs.services import accounting
from jobs.services.leases import (
    Heartbeat,
    LeasedTask,
    lease_claim,
    lease_dispatch,
    lease_extender,
    lease_release_fields,
)
from jury.engine.prompt import render_scenario, render_trace
from jury.services.scoring import scenario_of, trace_of
from llm.clients import model_router
from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import InvalidOutput, StructuredFailure, request_json
from rubric_lab.engine.prompts import render_prompt
from rubric_lab.engine.rubric import Criterion, RubricScore, score_rubric
from rubric_lab.models import (
    CriterionDecision,
    InstanceRubric,
    InstanceScore,
    InstanceScoreStatus,
)

logger = logging.getLogger(__name__)

JUDGE_PURPOSE = "rubric_judge"
JUDGE_REPAIRS = 1
PARALLEL_CRITERIA = 8


@dataclass(frozen=True)
class JudgedCriterion:
    """A criterion from outside the lab's rubrics (an expert's): its axis is the source's own
    name for it, and a criterion given without a weight counts one point."""

    text: str
    axis: str
    weight: int


class InstanceScoringError(ValueError):
    """A score cannot be launched as asked; the message says why."""


@dataclass
class Decision:
    index: int
    met: bool
    reason: str
    responses: list[ChatResponse] = field(default_factory=list)

    @property
    def criterion_id(self) -> str:
        return f"c{self.index + 1}"


@dataclass
class TraceScore:
    """A complete score of one transcript: one decision per criterion and the rubric score."""

    decisions: list[Decision]
    score: RubricScore

    @property
    def weighted_sum(self) -> int:
        return self.score.weighted_sum

    @property
    def positive_total(self) -> int:
        return self.score.positive_total

    @property
    def normalised(self) -> float | None:
        return self.score.normalised

    @property
    def met(self) -> list[bool]:
        return [decision.met for decision in self.decisions]


def rubric_criteria(rubric: InstanceRubric) -> list[Criterion]:
    return [
        Criterion(
            text=row.text,
            axis=row.axis,
            weight=row.weight,
            fact_ids=tuple(row.fact_ids),
            passage_ids=tuple(row.passage_ids),
            intent_basis=tuple(row.intent_basis),
        )
        for row in rubric.criteria.order_by("index")
    ]


def instance_rubric_score_trace(
    *,
    rubric: InstanceRubric,
    profile: Mapping[str, Any],
    scenario: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    judge_model: str,
    client=None,
    sample: str = "",
) -> TraceScore:
    """Score an arbitrary transcript with an instance rubric; writes nothing to the database.

    rubric: a stored InstanceRubric (its criteria are read in index order).
    profile: the patient profile dict (BenchmarkEntry.profile).
    scenario: ground truth for the judge, as the jury takes it (story, task_category, ...;
      jury.services.scoring.scenario_of(entry) builds it).
    events: the trace as dicts with event_id, turn, kind, content, tool_name, arguments, ok
      (jury.services.scoring.trace_of(conversation) builds them); reasoning events are hidden.
    judge_model: a model string, e.g. "offline/standard" or "openai/gpt-5.5".
    client: a chat client (default: the shared cached model router).
    sample: names an independent draw (e.g. a perturbed copy's id) for the response cache;
      two calls with the same transcript and sample share cached answers.

    Returns TraceScore (decisions, score; .weighted_sum and .normalised - None only when the
    rubric has no positive weight). Never a partial score: when any criterion's answer is
    still unusable after the repair turn it raises StructuredFailure, and on a provider fault
    ProviderError, each naming the criterion ("criterion 3: ...") - after every criterion was
    asked, so the calls made are all accounted by a recording client.
    """
    return criteria_score_trace(
        criteria=rubric_criteria(rubric),
        profile=profile,
        scenario=scenario,
        events=events,
        judge_model=judge_model,
        client=client,
        sample=f"instance-rubric:{rubric.pk}/{sample}",
    )


def criteria_score_trace(
    *,
    criteria: Sequence[Criterion | JudgedCriterion],
    profile: Mapping[str, Any],
    scenario: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    judge_model: str,
    client=None,
    sample: str = "",
) -> TraceScore:
    """`instance_rubric_score_trace` for any criteria with a text, an axis and a weight (an
    instance rubric's, or the expert criteria the refine study scores against); `sample`
    names the criteria set and the draw, each criterion's call adds its index."""
    client = client or model_router(True)
    trace_text = render_trace(events)
    requests = [
        criterion_request(
            criterion,
            profile=profile,
            scenario=scenario,
            events=events,
            trace_text=trace_text,
            judge_model=judge_model,
            sample=f"{sample}/c{index}",
        )
        for index, criterion in enumerate(criteria)
    ]
    with ThreadPoolExecutor(max_workers=PARALLEL_CRITERIA) as pool:
        outcomes = list(pool.map(lambda pair: _decide(client, *pair), enumerate(requests)))
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, StructuredFailure):
            raise StructuredFailure(f"criterion {index + 1}: {outcome.reason}", outcome.responses)
        if isinstance(outcome, ProviderError):
            raise ProviderError(f"criterion {index + 1}: {outcome}", kind=outcome.kind)
    return TraceScore(outcomes, score_rubric(criteria, [d.met for d in outcomes]))


def criterion_request(
    criterion: Criterion | JudgedCriterion,
    *,
    profile,
    scenario,
    events,
    trace_text: str,
    judge_model: str,
    sample: str,
) -> ChatRequest:
    system, user = render_prompt(
        "judge",
        {
            "criterion": criterion.text,
            "axis": criterion.axis or "unspecified",
            "weight": f"{criterion.weight:+d}",
            "profile": json.dumps(profile, indent=2, ensure_ascii=False),
            "scenario": render_scenario(scenario),
            "trace": trace_text,
        },
    )
    return ChatRequest(
        model=judge_model,
        purpose=JUDGE_PURPOSE,
        system=system,
        messages=(Message(role="user", content=user),),
        hints={
            "criterion": {
                "text": criterion.text,
                "axis": criterion.axis,
                "weight": criterion.weight,
            },
            "events": [dict(event) for event in events],
            "profile": dict(profile),
        },
        sample=sample,
    )


# A criterion judge's decision, for providers that hold an answer to a schema.
DECISION_SCHEMA = {
    "type": "object",
    "properties": {"met": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["met", "reason"],
    "additionalProperties": False,
}


def validate_decision(data: dict) -> dict:
    if not isinstance(data.get("met"), bool):
        raise InvalidOutput('"met" must be true or false')
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidOutput('"reason" must be a non-empty text')
    return {"met": data["met"], "reason": reason.strip()}


def _decide(
    client, index: int, request: ChatRequest
) -> Decision | StructuredFailure | ProviderError:
    try:
        result = request_json(
            client, request, validate_decision, max_repairs=JUDGE_REPAIRS, schema=DECISION_SCHEMA
        )
    except (StructuredFailure, ProviderError) as failure:
        return failure
    return Decision(index, result.data["met"], result.data["reason"], result.responses)


# --- stored scores for conversations ---------------------------------------------------------


def same_case_conversations(rubric: InstanceRubric):
    """What a rubric may score: every scorable reply to its conversation's case."""
    return (
        Conversation.objects.scorable()
        .filter(entry=rubric.conversation.entry)
        .select_related("run", "entry")
    )


def instance_score_launch(
    *, rubric: InstanceRubric, conversation: Conversation, judge_model: str, use_cache=True
) -> InstanceScore:
    """The score row for (rubric, conversation, judge): created pending, or reset to pending
    when an earlier attempt failed; a valid score is returned as it is (idempotent)."""
    if not conversation.entry_id or conversation.entry.profile is None:
        raise InstanceScoringError("The conversation has no enriched case to judge against.")
    score, created = InstanceScore.objects.get_or_create(
        rubric=rubric,
        conversation=conversation,
        judge_model=judge_model,
        defaults={"use_cache": use_cache},
    )
    if not created and score.status in (InstanceScoreStatus.INVALID, InstanceScoreStatus.ERROR):
        InstanceScore.objects.filter(pk=score.pk).update(
            status=InstanceScoreStatus.PENDING, failure_reason="", **lease_release_fields()
        )
        score.refresh_from_db()
    return score


def instance_score_dispatch(score: InstanceScore, send) -> list[LeasedTask]:
    pending = InstanceScore.objects.filter(pk=score.pk, status=InstanceScoreStatus.PENDING)
    with transaction.atomic():
        return lease_dispatch(pending, window=1, send=send)


def pending_score_ids() -> list[int]:
    rows = InstanceScore.objects.filter(status=InstanceScoreStatus.PENDING)
    return list(rows.values_list("pk", flat=True))


def instance_score_execute(score_id: int, token: str | None = None, *, client=None) -> bool:
    """Judge every criterion for a pending score if this message may take it; returns whether
    it ran. A valid score is never judged again."""
    row = InstanceScore.objects.filter(pk=score_id, status=InstanceScoreStatus.PENDING)
    mine = lease_claim(row, token)
    if mine is None:
        return False
    with Heartbeat(lease_extender(row, mine), label=f"instance score {score_id}"):
        _score(
            InstanceScore.objects.select_related("conversation__entry", "conversation__run").get(
                pk=score_id
            ),
            client,
        )
    return True


def instance_score_run_here(*, rubric: InstanceRubric, conversation, judge: str, client=None):
    """Launch and execute in this process (the pipeline's own-conversation score, the demo)."""
    score = instance_score_launch(rubric=rubric, conversation=conversation, judge_model=judge)
    instance_score_execute(score.pk, client=client)
    score.refresh_from_db()
    return score


def _score(score: InstanceScore, client) -> None:
    conversation = score.conversation
    recorder = accounting.RecordingClient(
        client or model_router(score.use_cache),
        owner=partial(ModelCall, run=conversation.run, conversation=conversation),
        also=accounting.spend_ledger(InstanceScore, score.pk),
    )
    result, status, reason = None, InstanceScoreStatus.VALID, ""
    try:
        result = instance_rubric_score_trace(
            rubric=score.rubric,
            profile=conversation.entry.profile,
            scenario=scenario_of(conversation.entry),
            events=trace_of(conversation),
            judge_model=score.judge_model,
            client=recorder,
            sample=f"conversation:{conversation.public_id}",
        )
    except StructuredFailure as failure:
        status, reason = InstanceScoreStatus.INVALID, failure.reason
    except ProviderError as error:
        status, reason = InstanceScoreStatus.ERROR, failure_text(error)
    except Exception as error:  # a bug must not leave the score pending forever
        logger.exception("instance score %s failed", score.pk)
        status, reason = InstanceScoreStatus.ERROR, failure_text(error)
    _store(score, result, recorder, status=status, reason=reason)


def _store(score: InstanceScore, result: TraceScore | None, recorder, *, status, reason) -> None:
    criteria = list(score.rubric.criteria.order_by("index"))
    unwritten = [(purpose, response) for purpose, response, _ in recorder.unwritten]
    with transaction.atomic():
        accounting.unwritten_save(recorder)
        accounting.spend_added(InstanceScore, score.pk, unwritten)  # the rest as they came
        if result is not None:
            CriterionDecision.objects.bulk_create(
                _decision_row(score, criteria[d.index], d) for d in result.decisions
            )
        InstanceScore.objects.filter(pk=score.pk).update(
            status=status,
            weighted_sum=result.weighted_sum if result else None,
            positive_total=result.positive_total if result else 0,
            normalised=result.normalised if result else None,
            failure_reason=reason,
            finished_at=timezone.now(),
            **lease_release_fields(),
        )


def _decision_row(score, criterion, decision: Decision) -> CriterionDecision:
    sums = accounting.totals(decision.responses)
    return CriterionDecision(
        score=score,
        criterion=criterion,
        met=decision.met,
        reason=decision.reason,
        raw_output=decision.responses[-1].text if decision.responses else "",
        attempts=[{"text": r.text, "cached": r.cached} for r in decision.responses],
        input_tokens=sums["input_tokens"],
        output_tokens=sums["output_tokens"],
        cost_usd=sums["cost_usd"],
        cached=bool(decision.responses) and all(r.cached for r in decision.responses),
    )
