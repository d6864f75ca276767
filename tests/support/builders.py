"""Test data built through the real services with the offline scripted provider, and the
fake server's answers to a set's enrichment calls."""

from __future__ import annotations

import json

from benchmark.engine.enrichment_script import build_entry
from benchmark.models import AgentConfig, BenchmarkSet, Run
from benchmark.services import agents, cases, conversations
from benchmark.services.runs import AgentChoice, run_launch
from tests.fakes.llm_server import FakeReply, RecordedRequest


def enriched_set(
    *,
    name: str = "Test set",
    size: int = 4,
    sampler_seed: int = 11,
    generator_model: str = "offline/standard",
) -> BenchmarkSet:
    """A benchmark set sampled from the shipped distribution, every entry enriched."""
    benchmark_set = cases.benchmark_set_create(
        name=name, distribution=cases.distribution_default_ensure(), size=size,
        sampler_seed=sampler_seed, generator_model=generator_model,
    )  # fmt: skip
    for entry_id in cases.pending_entry_ids(benchmark_set):
        cases.entry_enrich(entry_id)
    return benchmark_set


def shipped_agent(slug: str = "baseline") -> AgentConfig:
    return {c.slug: c for c in agents.agent_configs_ensure_shipped()}[slug]


def launched_run(
    benchmark_set: BenchmarkSet,
    *,
    name: str = "Test run",
    models: tuple[str, ...] = ("offline/careful",),
    agent: str = "baseline",
    patient_model: str = "offline/patient",
    **options,
) -> Run:
    """A launched run (conversations pending): every model with one shipped configuration."""
    config = shipped_agent(agent)
    return run_launch(
        name=name, benchmark_set=benchmark_set, patient_model=patient_model,
        agents=[AgentChoice(model, config) for model in models], **options,
    )  # fmt: skip


def played(run: Run) -> Run:
    """Execute every conversation of the run in this process, as a worker would."""
    for conversation_id in run.conversations.values_list("id", flat=True):
        conversations.conversation_execute(conversation_id)
    return run


def entry_answers(benchmark_set: BenchmarkSet, *, broken: set[int] = frozenset()):
    """A fake server responder that answers each entry's request with a valid entry for its
    seed (found in the prompt), or with a short story for the entries in `broken`."""
    entries = list(benchmark_set.entries.all())
    today = benchmark_set.created_at.date()

    def answer(request: RecordedRequest) -> FakeReply:
        body = json.dumps(request.body)
        for entry in entries:
            if json.dumps(json.dumps(entry.seed, indent=2))[1:-1] in body:
                data = build_entry(entry.seed, today)
                if entry.index in broken:
                    data["patient_story"] = "Too short."
                return FakeReply(text=json.dumps(data), input_tokens=2000, output_tokens=800)
        raise AssertionError("a request for no entry of the set")

    return answer
