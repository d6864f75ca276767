"""The five-stage rubric pipeline, each stage a separate, inspectable function.

    routing -> (retrieval) -> evidence synthesis -> dual track: atomic facts | interaction
    intent (in parallel threads) -> rubric synthesis -> audit

Every model stage goes through the provider layer with `request_json` (one repair turn with
the validation error fed back) and returns a StageRecord holding its prompt, input, output,
responses (tokens, cost) and time. Retrieval is recorded as a stage too, without a model
call, so the page reads like the pipeline. A stage that fails raises StageFailed carrying its
record; `run_pipeline` then stops and returns the stages so far and the reason, never a
partial rubric.

The pipeline sees the case (clinical profile, scenario) and what the patient said, never the
assistant's replies: a rubric written from the response it will judge would flatter it, and
one written from the patient side applies equally to every reply to the same case (and to
perturbed copies of it).

The audit is a closed loop: each round checks the rubric it is given and returns it revised
with a verdict; a round that finds nothing to change ("pass") ends the loop, otherwise the next
round audits the revision, up to `audit_rounds` rounds (the last revision is kept when none
passed, and the record says so).

Ablations: skip_routing searches with the patient's own words instead of planned queries;
skip_intent drops the interaction-intent track; skip_facts drops the medical-fact agent (the
synthesis cites the evidence statements themselves, undecomposed and unfiltered); skip_audit
keeps the synthesis draft as final. Identical stage inputs give identical requests, so a
cached answer is shared across ablations of the same case and the comparison is not blurred by
sampling noise.

The direct-generation baseline (`method="direct"`) is one model call that writes the rubric
from the case alone: no retrieval, no evidence, no facts, no intent, no audit.

Each model stage's sampling (temperature, top-p) comes from `PipelineOptions.sampling` by stage
name; a stage left out uses the provider's defaults. Every rubric holds 5 to 14 criteria
(rubric.check_criterion_count): an answer outside that range gets the repair turn with the rule
stated, then fails the stage.

Pure Python: no Django.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import (
    ChatClient,
    InvalidOutput,
    StructuredFailure,
    request_json,
)
from rubric_lab.engine.prompts import render_json, render_passages, render_prompt
from rubric_lab.engine.retrieval import Retriever, search_all
from rubric_lab.engine.rubric import (
    INTENT_KEYS,
    Criterion,
    RubricError,
    check_criterion_count,
    criteria_from_rows,
)

STAGES = ("routing", "retrieval", "evidence", "facts", "intent", "synthesis", "audit")
MODEL_STAGES = ("routing", "evidence", "facts", "intent", "synthesis", "audit")
DIRECT_STAGES = ("direct",)
METHODS = ("pipeline", "direct")
PURPOSES = {stage: f"rubric_{stage}" for stage in (*MODEL_STAGES, *DIRECT_STAGES)}
REPAIRS = 1
DEFAULT_AUDIT_ROUNDS, MAX_AUDIT_ROUNDS = 3, 5
VERDICTS = ("pass", "revise")
MAX_QUERIES = 6
MAX_EVIDENCE = 24
MAX_FACTS = 30
URGENCIES = ("emergency", "urgent", "soon", "routine")
EVIDENCE_KINDS = ("recommendation", "red_flag", "contraindication", "caution", "resource")
PROFILE_FIELDS = ("age", "sex", "gender", "conditions", "medications", "allergies", "caregiver")


@dataclass(frozen=True)
class Case:
    """What the pipeline knows about a case. `key` names the sample for the response cache
    (a conversation's public id), never the model under evaluation."""

    key: str
    profile: Mapping[str, Any]
    scenario: Mapping[str, Any]
    patient_messages: tuple[str, ...]

    def as_hint(self) -> dict[str, Any]:
        return {
            "profile": dict(self.profile),
            "scenario": dict(self.scenario),
            "patient_messages": list(self.patient_messages),
        }


@dataclass(frozen=True)
class Sampling:
    """A model stage's sampling settings; None leaves the provider's default."""

    temperature: float | None = None
    top_p: float | None = None


@dataclass(frozen=True)
class PipelineOptions:
    model: str
    top_k: int = 4
    method: str = "pipeline"
    skip_routing: bool = False
    skip_intent: bool = False
    skip_facts: bool = False
    skip_audit: bool = False
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS
    sampling: Mapping[str, Sampling] = field(default_factory=dict)


def stages_of(method: str) -> tuple[str, ...]:
    """The stages a method runs, in order."""
    return DIRECT_STAGES if method == "direct" else STAGES


@dataclass
class StageRecord:
    name: str
    status: str  # ok / failed / skipped
    model: str = ""
    system: str = ""
    user: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None
    responses: list[ChatResponse] = field(default_factory=list)
    error: str = ""
    elapsed_ms: float = 0.0
    sampling: Sampling = field(default_factory=Sampling)


class StageFailed(Exception):
    def __init__(self, record: StageRecord):
        super().__init__(f"{record.name}: {record.error}")
        self.record = record


@dataclass
class PipelineOutcome:
    stages: list[StageRecord]
    criteria: list[Criterion] | None = None
    facts: list[dict[str, Any]] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)
    failed_stage: str = ""
    failure_reason: str = ""

    @property
    def ok(self) -> bool:
        return self.criteria is not None


# --- the whole pipeline ---------------------------------------------------------------------


def run_pipeline(
    client: ChatClient,
    case: Case,
    retriever: Retriever,
    options: PipelineOptions,
    *,
    on_stage: Callable[[StageRecord], None] | None = None,
) -> PipelineOutcome:
    """Run every stage in order; `on_stage` sees each record as it finishes (main thread)."""
    stages: list[StageRecord] = []

    def record(stage: StageRecord) -> StageRecord:
        stages.append(stage)
        if on_stage is not None:
            on_stage(stage)
        return stage

    try:
        if options.method == "direct":
            final, facts, passages = record(direct_stage(client, case, options)), [], []
        else:
            final, facts, passages = _stages(client, case, retriever, options, record)
    except StageFailed as failure:
        record(failure.record)
        return PipelineOutcome(
            stages, failed_stage=failure.record.name, failure_reason=failure.record.error
        )
    return PipelineOutcome(
        stages,
        criteria=[criterion_of_row(row) for row in final.output["criteria"]],
        facts=facts,
        passages=passages,
    )


def _stages(client, case, retriever, options, record) -> tuple[StageRecord, list, list]:
    """The five-stage pipeline: its final (audited) record, the facts and the passages."""
    routing = record(routing_stage(client, case, options))
    retrieval = record(retrieval_stage(retriever, routing.output["queries"], options.top_k))
    passages = retrieval.output["passages"]
    evidence = record(evidence_stage(client, case, passages, options))
    facts, intent = dual_track(client, case, evidence.output, passages, options, record)
    draft = record(synthesis_stage(client, case, facts.output, intent.output, options))
    final = record(audit_loop(client, case, facts.output, intent.output, draft, options))
    return final, facts.output["facts"], passages


def dual_track(client, case, evidence, passages, options, record):
    """Atomic facts and interaction intent in two threads; both records are kept, and a
    failure of either fails the pipeline (facts first when both fail)."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rubric-track") as pool:
        facts_future = pool.submit(_catch, facts_stage, client, case, evidence, passages, options)
        intent_future = pool.submit(_catch, intent_stage, client, case, options)
        facts, intent = facts_future.result(), intent_future.result()
    for stage in (facts, intent):
        if stage.status != "failed":
            record(stage)
    for stage in (facts, intent):
        if stage.status == "failed":
            raise StageFailed(stage)
    return facts, intent


def _catch(stage_function, *args) -> StageRecord:
    try:
        return stage_function(*args)
    except StageFailed as failure:
        return failure.record


# --- stages ---------------------------------------------------------------------------------


def routing_stage(client: ChatClient, case: Case, options: PipelineOptions) -> StageRecord:
    if options.skip_routing:
        query = " ".join((*case.patient_messages, str(case.scenario.get("condition", ""))))
        return skipped("routing", {"queries": [query.strip() or "primary care request"]})
    return ask_model(
        client,
        "routing",
        case,
        options,
        values={"case": render_case(case), "max_queries": MAX_QUERIES},
        validate=validate_routing,
        stage_input={"case": case.as_hint()},
    )


def retrieval_stage(retriever: Retriever, queries: Sequence[str], top_k: int) -> StageRecord:
    started = time.perf_counter()
    rows = search_all(retriever, queries, top_k)
    passages = [
        {**row["passage"].as_dict(), "score": round(row["score"], 4), "queries": row["queries"]}
        for row in rows
    ]
    stage = StageRecord(
        "retrieval",
        "ok",
        input={"queries": list(queries), "top_k": top_k},
        output={"passages": passages},
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )
    if not passages:
        stage.status, stage.error = "failed", "no passage matched any query"
        raise StageFailed(stage)
    return stage


def evidence_stage(client, case: Case, passages: list[dict], options) -> StageRecord:
    known = {passage["passage_id"] for passage in passages}
    return ask_model(
        client,
        "evidence",
        case,
        options,
        values={"case": render_case(case), "passages": render_passages(passages)},
        validate=lambda data: validate_evidence(data, known),
        stage_input={"passage_ids": sorted(known)},
        hints={"passages": passages},
    )


def facts_stage(client, case: Case, evidence: dict, passages: list[dict], options) -> StageRecord:
    if options.skip_facts:
        return skipped("facts", evidence_as_facts(evidence["evidence"]))
    by_id = {item["id"]: item for item in evidence["evidence"]}
    stage = ask_model(
        client,
        "facts",
        case,
        options,
        values={"case": render_case(case), "evidence": render_json(evidence["evidence"])},
        validate=lambda data: validate_facts(data, by_id),
        stage_input={"evidence": evidence["evidence"]},
        hints={"evidence": evidence["evidence"]},
    )
    return stage


def intent_stage(client, case: Case, options: PipelineOptions) -> StageRecord:
    if options.skip_intent:
        return skipped("intent", None)
    return ask_model(
        client,
        "intent",
        case,
        options,
        values={"case": render_case(case)},
        validate=validate_intent,
        stage_input={"case": case.as_hint()},
    )


def synthesis_stage(client, case, facts: dict, intent: dict | None, options) -> StageRecord:
    fact_passages = {fact["id"]: fact["passage_ids"] for fact in facts["facts"]}
    with_intent = intent is not None
    rules = [
        "" if with_intent else "- No interaction intent is available: leave intent_basis empty.",
        ""
        if not options.skip_facts
        else (
            "- No atomic facts were extracted: the reference board lists the evidence "
            "statements themselves; cite their ids as fact_ids."
        ),
    ]
    return ask_model(
        client,
        "synthesis",
        case,
        options,
        values={
            "case": render_case(case),
            "facts": render_json(facts["facts"]),
            "intent": render_intent(intent),
            "intent_rule": "\n".join(r for r in rules if r),
        },
        validate=lambda data: validate_criteria(data, fact_passages, with_intent),
        stage_input={"facts": facts["facts"], "intent": intent},
        hints={"facts": facts["facts"], "intent": intent},
    )


def evidence_as_facts(evidence: list[dict]) -> dict:
    """The fact-agent ablation's stand-in for the reference board: every evidence statement as
    it stands (not decomposed, not filtered for relevance), so criteria still cite sources."""
    return {
        "facts": [
            {
                "id": item["id"],
                "text": item["statement"],
                "evidence_ids": [item["id"]],
                "passage_ids": list(item["passage_ids"]),
                "safety": item["kind"] in ("red_flag", "contraindication", "resource"),
            }
            for item in evidence
        ]
    }


def audit_loop(client, case, facts: dict, intent: dict | None, draft: StageRecord, options):
    """Audit rounds until one passes the rubric it was given or `audit_rounds` have run; one
    record holds every round (its prompts, verdict, gaps and removals) and all their calls."""
    if options.skip_audit:
        return skipped("audit", draft.output)
    rows, rounds, responses, elapsed = draft.output["criteria"], [], [], 0.0
    stage = None
    for number in range(1, options.audit_rounds + 1):
        try:
            stage = audit_stage(client, case, facts, intent, rows, options, number, rounds)
        except StageFailed as failure:
            failure.record.responses = [*responses, *failure.record.responses]
            failure.record.output = {"rounds": rounds} if rounds else None
            raise
        responses += stage.responses
        elapsed += stage.elapsed_ms
        rows = stage.output["criteria"]
        rounds.append(
            {
                "round": number,
                "verdict": stage.output["verdict"],
                "gaps": stage.output["gaps"],
                "removed": stage.output["removed"],
                "criteria": len(rows),
                "user": stage.user,
            }
        )
        if stage.output["verdict"] == "pass":
            break
    passed = rounds[-1]["verdict"] == "pass"
    stage.output = {**stage.output, "passed": passed, "rounds": rounds}
    stage.input = {"draft": draft.output["criteria"], "rounds_allowed": options.audit_rounds}
    stage.responses, stage.elapsed_ms = responses, elapsed
    return stage


def audit_stage(client, case, facts, intent, rows, options, number: int, before: list[dict]):
    fact_passages = {fact["id"]: fact["passage_ids"] for fact in facts["facts"]}
    return ask_model(
        client,
        "audit",
        case,
        options,
        values={
            "case": render_case(case),
            "facts": render_json(facts["facts"]),
            "intent": render_intent(intent),
            "draft": render_json(rows),
            "round_note": _round_note(number, options.audit_rounds, before),
        },
        validate=lambda data: validate_audit(data, fact_passages, intent is not None),
        stage_input={"draft": rows, "round": number},
        hints={"facts": facts["facts"], "intent": intent, "draft": rows, "round": number},
    )


def _round_note(number: int, allowed: int, before: list[dict]) -> str:
    if number == 1:
        return f"This is audit round 1 of at most {allowed}."
    gaps = "; ".join(map(str, before[-1]["gaps"])) or "(no gaps named)"
    return (
        f"This is audit round {number} of at most {allowed}. The draft below is the previous "
        f"round's revision, made for: {gaps}. Check it again from the start."
    )


def direct_stage(client, case: Case, options: PipelineOptions) -> StageRecord:
    return ask_model(
        client,
        "direct",
        case,
        options,
        values={"case": render_case(case)},
        validate=validate_direct,
        stage_input={"case": case.as_hint()},
    )


def skipped(name: str, output: dict | None) -> StageRecord:
    return StageRecord(name, "skipped", input={"reason": "ablation"}, output=output)


def ask_model(
    client: ChatClient,
    name: str,
    case: Case,
    options: PipelineOptions,
    *,
    values: Mapping[str, Any],
    validate: Callable[[dict], dict],
    stage_input: dict[str, Any],
    hints: Mapping[str, Any] | None = None,
) -> StageRecord:
    system, user = render_prompt(name, values)
    sampling = options.sampling.get(name, Sampling())
    request = ChatRequest(
        model=options.model,
        purpose=PURPOSES[name],
        system=system,
        messages=(Message(role="user", content=user),),
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        hints={"stage": name, "case": case.as_hint(), **(hints or {})},
        sample=f"rubric-case:{case.key}",
    )
    stage = StageRecord(
        name, "ok", model=options.model, system=system, user=user, sampling=sampling
    )
    stage.input = stage_input
    started = time.perf_counter()
    try:
        result = request_json(client, request, validate, max_repairs=REPAIRS)
    except StructuredFailure as failure:
        stage.status, stage.error, stage.responses = "failed", failure.reason, failure.responses
    except ProviderError as error:
        stage.status, stage.error = "failed", failure_text(error)
    else:
        stage.output, stage.responses = result.data, result.responses
    stage.elapsed_ms = (time.perf_counter() - started) * 1000
    if stage.status == "failed":
        raise StageFailed(stage)
    return stage


# --- validators: each returns normalised data or raises InvalidOutput -----------------------


def validate_routing(data: dict) -> dict:
    queries = _list(data, "queries", 1, MAX_QUERIES)
    texts = []
    for number, item in enumerate(queries, 1):
        text = item.get("query") if isinstance(item, dict) else item
        if not isinstance(text, str) or not 3 <= len(text.strip()) <= 300:
            raise InvalidOutput(f"query {number} must be a text of 3-300 characters")
        texts.append(" ".join(text.split()))
    return {"queries": texts, "plan": queries}


def validate_evidence(data: dict, known_passages: set[str]) -> dict:
    items = _list(data, "evidence", 1, MAX_EVIDENCE)
    ids: set[str] = set()
    for number, item in enumerate(items, 1):
        _require_fields(item, ("id", "statement", "kind", "passage_ids"), f"evidence {number}")
        if item["id"] in ids:
            raise InvalidOutput(f"evidence id {item['id']!r} is used twice")
        ids.add(item["id"])
        if item["kind"] not in EVIDENCE_KINDS:
            raise InvalidOutput(
                f"evidence {number} kind must be one of {', '.join(EVIDENCE_KINDS)}"
            )
        cited = _id_list(item["passage_ids"], f"evidence {number} passage_ids")
        unknown = sorted(set(cited) - known_passages)
        if not cited or unknown:
            raise InvalidOutput(
                f"evidence {number} must cite retrieved passages only"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
    conflicts = data.get("conflicts", [])
    if not isinstance(conflicts, list):
        raise InvalidOutput("conflicts must be a list of texts")
    return {"evidence": items, "conflicts": [str(conflict) for conflict in conflicts]}


def validate_facts(data: dict, evidence_by_id: Mapping[str, dict]) -> dict:
    items = _list(data, "facts", 1, MAX_FACTS)
    facts, ids = [], set()
    for number, item in enumerate(items, 1):
        _require_fields(item, ("id", "text", "evidence_ids"), f"fact {number}")
        if item["id"] in ids:
            raise InvalidOutput(f"fact id {item['id']!r} is used twice")
        ids.add(item["id"])
        cited = _id_list(item["evidence_ids"], f"fact {number} evidence_ids")
        unknown = sorted(set(cited) - set(evidence_by_id))
        if not cited or unknown:
            raise InvalidOutput(
                f"fact {number} must cite evidence ids from the list"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
        passages = [p for e in cited for p in evidence_by_id[e]["passage_ids"]]
        facts.append(
            {
                "id": item["id"],
                "text": item["text"],
                "evidence_ids": cited,
                "passage_ids": list(dict.fromkeys(passages)),
                "safety": bool(item.get("safety", False)),
            }
        )
    return {"facts": facts}


def validate_intent(data: dict) -> dict:
    _require_fields(data, INTENT_KEYS, "intent")
    if data["urgency"] not in URGENCIES:
        raise InvalidOutput(f"urgency must be one of {', '.join(URGENCIES)}")
    missing = data["missing_context"]
    if not isinstance(missing, list) or not all(isinstance(item, str) for item in missing):
        raise InvalidOutput("missing_context must be a list of texts")
    return {key: data[key] for key in INTENT_KEYS}


def validate_criteria(
    data: dict, fact_passages: Mapping, with_intent: bool, *, require_support: bool = True
) -> dict:
    rows = _list(data, "criteria", 1, None)
    try:
        parsed = criteria_from_rows(
            rows,
            fact_passages=fact_passages,
            with_intent=with_intent,
            require_support=require_support,
        )
        check_criterion_count(len(parsed))
    except RubricError as error:
        raise InvalidOutput(str(error)) from None
    return {"criteria": [criterion_row(criterion) for criterion in parsed]}


def validate_audit(data: dict, fact_passages: Mapping, with_intent: bool) -> dict:
    result = validate_criteria(data, fact_passages, with_intent)
    gaps, removed = data.get("gaps", []), data.get("removed", [])
    if not isinstance(gaps, list) or not isinstance(removed, list):
        raise InvalidOutput("gaps and removed must be lists")
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        raise InvalidOutput(
            '"verdict" must be "pass" (the rubric you were given needed no change) or '
            '"revise" (you changed it)'
        )
    return {**result, "gaps": gaps, "removed": removed, "verdict": verdict}


def validate_direct(data: dict) -> dict:
    """A directly written rubric: the same rules, except that it rests on no facts."""
    return validate_criteria(data, {}, with_intent=False, require_support=False)


def criterion_row(criterion: Criterion) -> dict[str, Any]:
    return {
        "text": criterion.text,
        "axis": criterion.axis,
        "weight": criterion.weight,
        "fact_ids": list(criterion.fact_ids),
        "passage_ids": list(criterion.passage_ids),
        "intent_basis": list(criterion.intent_basis),
    }


def criterion_of_row(row: Mapping[str, Any]) -> Criterion:
    return Criterion(
        text=row["text"],
        axis=row["axis"],
        weight=row["weight"],
        fact_ids=tuple(row["fact_ids"]),
        passage_ids=tuple(row["passage_ids"]),
        intent_basis=tuple(row["intent_basis"]),
    )


def _list(data: dict, key: str, least: int, most: int | None) -> list:
    value = data.get(key)
    if not isinstance(value, list):
        raise InvalidOutput(f'"{key}" must be a list')
    if len(value) < least or (most is not None and len(value) > most):
        bound = f"{least}-{most}" if most is not None else f"at least {least}"
        raise InvalidOutput(f'"{key}" must hold {bound} items, not {len(value)}')
    return value


def _require_fields(item: Any, names: Sequence[str], label: str) -> None:
    if not isinstance(item, dict):
        raise InvalidOutput(f"{label} must be an object")
    missing = [name for name in names if item.get(name) in (None, "")]
    if missing:
        raise InvalidOutput(f"{label} is missing {', '.join(missing)}")


def _id_list(value: Any, label: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidOutput(f"{label} must be a list of ids")
    return value


# --- rendering ------------------------------------------------------------------------------


def render_case(case: Case) -> str:
    profile = {key: case.profile.get(key) for key in PROFILE_FIELDS if key in case.profile}
    said = "\n".join(f"{n}. {text}" for n, text in enumerate(case.patient_messages, 1))
    return (
        f"Patient record:\n{render_json(profile)}\n\n"
        f"Scenario:\n{render_json(dict(case.scenario))}\n\n"
        f"What the patient said, in order:\n{said or '(nothing recorded)'}"
    )


def render_intent(intent: dict | None) -> str:
    if intent is None:
        return "Not available (the interaction-intent track was left out of this run)."
    return render_json(intent)
