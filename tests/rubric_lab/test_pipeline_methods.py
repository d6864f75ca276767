"""The pipeline's methods and rules with the offline scripts: direct generation, the fact-agent
ablation, the closed audit loop, the 5-14 criteria rule and per-stage sampling. Pure engine."""

import json
from dataclasses import replace

import pytest

from llm.engine.chat import ChatResponse
from llm.engine.providers.offline import OfflineProvider
from rubric_lab.engine.knowledge import load_shipped_corpus
from rubric_lab.engine.pipeline import Case, PipelineOptions, Sampling, run_pipeline
from rubric_lab.engine.retrieval import BM25Retriever

CASE = Case(
    key="methods",
    profile={
        "age": 67, "sex": "female", "conditions": ["Atrial fibrillation"],
        "medications": [{"name": "Apixaban", "dosage": "5 mg", "status": "active"}],
    },
    scenario={"condition": "Atrial fibrillation", "severity": "severe",
              "task_category": "health_concern", "task_subcategory": "emergency_symptoms"},
    patient_messages=("I've had chest tightness since this morning, can I see someone?",),
)  # fmt: skip


@pytest.fixture(scope="module")
def retriever():
    return BM25Retriever(load_shipped_corpus())


class Recording:
    """The offline provider, keeping every request it answered."""

    def __init__(self, answer=None):
        self.offline = OfflineProvider("standard")
        self.requests = []
        self.answer = answer  # stage -> text that replaces the script's answer

    def chat(self, request):
        self.requests.append(request)
        stage = request.purpose.removeprefix("rubric_")
        if self.answer and stage in self.answer:
            return ChatResponse(text=self.answer[stage], model=request.model)
        return self.offline.chat(request)


def options(**fields):
    return PipelineOptions(model="offline/standard", **fields)


def test_direct_generation_is_one_model_call_citing_nothing(retriever):
    client = Recording()

    outcome = run_pipeline(client, CASE, retriever, options(method="direct"))

    assert outcome.ok and [s.name for s in outcome.stages] == ["direct"]
    assert [r.purpose for r in client.requests] == ["rubric_direct"]
    assert 5 <= len(outcome.criteria) <= 14
    assert all(not c.fact_ids and not c.passage_ids for c in outcome.criteria)
    assert outcome.facts == [] and outcome.passages == []
    assert "search results" in client.requests[0].system  # the direct prompt, not synthesis


def test_without_the_fact_agent_the_synthesis_cites_the_evidence_itself(retriever):
    client = Recording()

    outcome = run_pipeline(client, CASE, retriever, options(skip_facts=True))

    stages = {s.name: s for s in outcome.stages}
    assert stages["facts"].status == "skipped"
    assert "rubric_facts" not in [r.purpose for r in client.requests]
    evidence_ids = {item["id"] for item in stages["evidence"].output["evidence"]}
    assert {f["id"] for f in outcome.facts} == evidence_ids
    assert outcome.ok and all(set(c.fact_ids) <= evidence_ids for c in outcome.criteria)
    synthesis = next(r for r in client.requests if r.purpose == "rubric_synthesis")
    assert "No atomic facts were extracted" in synthesis.system


def test_the_audit_revises_until_a_round_passes_the_rubric_it_was_given(retriever):
    client = Recording()

    outcome = run_pipeline(client, CASE, retriever, options(audit_rounds=3))

    audit = outcome.stages[-1]
    rounds = audit.output["rounds"]
    assert [r["verdict"] for r in rounds] == ["revise", "pass"] and audit.output["passed"]
    assert len(audit.responses) == 2 == [r.purpose for r in client.requests].count("rubric_audit")
    # Round 2 audits round 1's revision and is told what that revision was for.
    second = [r for r in client.requests if r.purpose == "rubric_audit"][1]
    assert "audit round 2 of at most 3" in second.messages[0].content
    assert rounds[0]["gaps"][0].split(" was")[0] in second.messages[0].content
    assert len(outcome.criteria) == rounds[-1]["criteria"]


def test_an_audit_that_never_passes_stops_after_its_rounds_and_says_so(retriever):
    never = {"verdict": "revise", "gaps": ["still unsure"], "removed": []}
    client = Recording()
    draft = run_pipeline(client, CASE, retriever, options(skip_audit=True)).stages[-2]
    never["criteria"] = draft.output["criteria"]
    client = Recording(answer={"audit": json.dumps(never)})

    outcome = run_pipeline(client, CASE, retriever, options(audit_rounds=2))

    audit = outcome.stages[-1]
    assert outcome.ok and audit.output["passed"] is False
    assert [r["verdict"] for r in audit.output["rounds"]] == ["revise", "revise"]


def test_one_audit_round_is_the_open_audit_of_before(retriever):
    outcome = run_pipeline(Recording(), CASE, retriever, options(audit_rounds=1))

    assert len(outcome.stages[-1].output["rounds"]) == 1


@pytest.mark.parametrize("count", [1, 4, 15])
def test_a_rubric_outside_5_to_14_criteria_gets_a_repair_turn_then_fails(retriever, count):
    row = {"axis": "communication", "weight": 2}
    rows = [{**row, "text": f"Behaviour number {n}"} for n in range(count)]
    client = Recording(answer={"direct": json.dumps({"criteria": rows})})

    outcome = run_pipeline(client, CASE, retriever, options(method="direct"))

    assert not outcome.ok and outcome.failed_stage == "direct"
    noun = "criterion" if count == 1 else "criteria"
    assert f"the rubric has {count} {noun}; an instance rubric needs 5 to 14" in (
        outcome.failure_reason
    )
    assert len(client.requests) == 2  # the answer and one repair turn with the rule stated
    assert "needs 5 to 14 criteria" in client.requests[1].messages[-1].content


def test_each_stage_asks_with_its_own_sampling_and_records_it(retriever):
    sampling = {"routing": Sampling(0.7, 0.9), "audit": Sampling(temperature=0.2)}
    client = Recording()

    outcome = run_pipeline(client, CASE, retriever, options(sampling=sampling))

    sent = {r.purpose: (r.temperature, r.top_p) for r in client.requests}
    assert sent["rubric_routing"] == (0.7, 0.9)
    assert sent["rubric_audit"] == (0.2, None)
    assert sent["rubric_synthesis"] == (None, None)  # left out: the provider's default
    recorded = {s.name: s.sampling for s in outcome.stages}
    assert recorded["routing"] == Sampling(0.7, 0.9) and recorded["evidence"] == Sampling()


def test_identical_stage_inputs_give_identical_requests_across_ablations(retriever):
    full, without_audit = Recording(), Recording()
    run_pipeline(full, CASE, retriever, options())
    run_pipeline(without_audit, CASE, retriever, options(skip_audit=True))

    def request_of(client, purpose):
        return next(replace(r, hints={}) for r in client.requests if r.purpose == purpose)

    assert request_of(full, "rubric_synthesis") == request_of(without_audit, "rubric_synthesis")
