"""Scoring a trace that is not a stored conversation (a near-miss copy, a refined copy) with
the judge setups the lab compares: the jury's six case-agnostic rubrics, an instance rubric,
or pairwise with no rubric.

The generic setup renders the jury's own prompt (jury.engine.prompt) and parses with the jury's
own rules, so a near-miss is judged exactly as a stored conversation would be; the aggregate
is the jury's weighted mean. Every call goes through request_json with the jury's one repair
turn; an answer still unusable raises StructuredFailure, a provider fault ProviderError - the
caller stores either as the unit's failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.models import Conversation
from jury.engine.aggregate import jury_aggregate
from jury.engine.parse import JUDGE_ANSWER_SCHEMA, validate_judge_answer
from jury.models import Jury
from jury.services.rubrics import current_versions, rubric_of
from jury.services.scoring import JUDGE_REPAIRS, judge_request_for_trace, scenario_of, trace_of
from llm.engine.chat import ProviderError
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import StructuredFailure, request_json
from rubric_lab.engine import pairwise
from rubric_lab.engine.perturb import Case
from rubric_lab.services.instance_scoring import (
    JudgedCriterion,
    TraceScore,
    criteria_score_trace,
    instance_rubric_score_trace,
)

Events = Sequence[Mapping[str, Any]]


def case_of(conversation: Conversation) -> Case:
    """A stored conversation as the evaluation engines read it (the judges' view of it)."""
    return Case(
        events=tuple(trace_of(conversation)),
        profile=conversation.entry.profile or {},
        scenario=scenario_of(conversation.entry),
    )


def generic_score(
    client, *, jury: Jury, events: Events, case: Case, sample: str
) -> tuple[float, dict[str, Any]]:
    """The jury aggregate of `events` over the current judged rubrics, and every score."""
    rubrics = [rubric_of(version) for version in current_versions(judged_only=True)]
    by_judge: dict[str, dict[str, float]] = {}
    details: dict[str, Any] = {}
    for seat, judge in enumerate(jury.judges):
        for rubric in rubrics:
            request = judge_request_for_trace(
                rubric=rubric,
                judge_model=judge,
                profile=case.profile,
                scenario=case.scenario,
                events=list(events),
                sample=f"{sample}/judge:{seat}",
            )
            result = request_json(
                client,
                request,
                validate_judge_answer,
                max_repairs=JUDGE_REPAIRS,
                schema=JUDGE_ANSWER_SCHEMA,
            )
            by_judge.setdefault(judge, {})[rubric.id] = result.data["score"]
            details[f"{seat}:{rubric.id}"] = result.data
    return jury_aggregate(by_judge, jury.weights), details


def instance_score(
    client, *, rubric, judge_model: str, events: Events, case: Case, sample: str
) -> tuple[float, dict[str, Any]]:
    """The normalised instance-rubric score of `events`, through the lab's transcript scorer
    (rubric_lab.services.instance_scoring). A criterion whose answer stayed unusable, a
    provider fault, or a rubric with nothing to normalise by raises InstanceScoreFailure with
    the reason: never a partial score."""
    try:
        result = instance_rubric_score_trace(
            rubric=rubric,
            profile=case.profile,
            scenario=case.scenario,
            events=list(events),
            judge_model=judge_model,
            client=client,
            sample=sample,
        )
    except StructuredFailure as failure:
        raw = failure.responses[-1].text if failure.responses else ""
        raise InstanceScoreFailure(failure.reason, raw_output=raw) from failure
    except ProviderError as error:
        raise InstanceScoreFailure(failure_text(error)) from error
    if result.normalised is None:
        raise InstanceScoreFailure("the instance rubric has no positive weight to normalise by")
    return result.normalised, {
        **result.score.as_dict(),
        "decisions": [
            {"criterion": d.index + 1, "met": d.met, "reason": d.reason} for d in result.decisions
        ],
    }


def criteria_score(
    client,
    *,
    criteria: Sequence[JudgedCriterion],
    judge_model: str,
    events: Events,
    case: Case,
    sample: str,
) -> TraceScore:
    """`events` judged criterion by criterion against criteria from outside the lab (the expert
    criteria); raises StructuredFailure or ProviderError naming the criterion, as the jury's
    calls do, for the caller to store as the unit's failure."""
    return criteria_score_trace(
        criteria=criteria,
        profile=case.profile,
        scenario=case.scenario,
        events=list(events),
        judge_model=judge_model,
        client=client,
        sample=sample,
    )


class InstanceScoreFailure(ValueError):
    """An instance-rubric score that cannot be had; the message says why (naming the
    criterion), `raw_output` holds the last unusable answer if there was one."""

    def __init__(self, reason: str, *, raw_output: str = ""):
        super().__init__(reason)
        self.raw_output = raw_output


def pairwise_shares(
    client, *, judge_model: str, reference: Events, perturbed: Events, case: Case, sample: str
) -> tuple[float, float, dict[str, Any]]:
    """The reference's preference share shown first, then shown second, and both verdicts."""
    verdicts = {}
    shares = []
    for position, (first, second) in (("A", (reference, perturbed)), ("B", (perturbed, reference))):
        request = pairwise.pairwise_request(
            first=first,
            second=second,
            profile=case.profile,
            scenario=case.scenario,
            model=judge_model,
            sample=f"{sample}/reference-as:{position}",
        )
        data = request_json(
            client, request, pairwise.validate_pairwise_answer, max_repairs=JUDGE_REPAIRS
        ).data
        verdicts[f"reference_as_{position}"] = data
        shares.append(pairwise.reference_share(data["better"], reference_position=position))
    return shares[0], shares[1], verdicts
