"""Conversations played elsewhere, stored as an imported run: the one place every importer
saves them (the rubric lab's HealthBench import; any other format turns its rows into
`benchmark.engine.imports.ImportedConversation` and calls `conversations_import`).

Contract:

    conversations_import(*, name, source, conversations, responder, user) -> ImportedRun

- `conversations`: ImportedConversation rows, checked first (`conversation_problems`, unique
  keys); any problem raises ImportRefused listing every one of them by key, and nothing is
  saved. The caller runs it inside its own transaction when it saves more with it (the lab
  saves the expert criteria in the same one), so a later failure leaves nothing either.
- What it stores, in one transaction: a benchmark set named `name` with `imported_from =
  source` and no distribution, one ready entry per case (index in file order; conversations
  sharing a `case_key` are one case, every other conversation its own; the patient record as
  given, possibly empty; `seed` holds the source, the case's id and tags; the case columns the
  importer filled), a finished run with one agent per model the rows name (the
  conversation's `model` and `label`; rows naming none get `responder`, a label for who wrote
  the replies, e.g. "imported/healthbench"; no agent configuration), and per conversation a
  finished Conversation (termination `imported`, no sandbox) with its trace events.
- `ImportedRun.conversations` maps each key to its stored conversation.

Imported conversations are scorable like played ones: the jury, the rubric lab's pipeline,
instance scoring, near-miss studies and coverage read them through the same models. What they
lack is a sandbox: there is nothing to resume, and a run cannot be launched on an imported set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from benchmark.engine.chat_import import read_jsonl
from benchmark.engine.imports import (
    CASE_COLUMNS,
    ImportedConversation,
    case_problems,
    conversation_problems,
    duplicate_keys,
    trace_events,
)
from benchmark.models import (
    BenchmarkEntry,
    BenchmarkSet,
    Conversation,
    ConversationStatus,
    EntryStatus,
    Run,
    RunAgent,
    Termination,
    TraceEvent,
)
from benchmark.services.runs import config_hash
from common.text_files import NotText, decode_text
from jobs.models import JobStatus

MAX_NAME_CHARS = 200
FILE_RESPONDER = "imported"  # the agent of rows that name no model


class ImportRefused(ValueError):
    """Conversations that cannot be stored; `problems` names each one."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class ImportedRun:
    run: Run
    conversations: dict[str, Conversation]  # the source's key -> stored conversation


def import_problems(conversations: Sequence[ImportedConversation], *, name: str) -> list[str]:
    """Every reason the batch cannot be stored, each naming its conversation."""
    problems = []
    if not name.strip() or len(name) > MAX_NAME_CHARS:
        problems.append(f"the name must be text of 1 to {MAX_NAME_CHARS} characters")
    if not conversations:
        problems.append("there is no conversation to import")
    for conversation in conversations:
        problems += [f"{conversation.key!r}: {p}" for p in conversation_problems(conversation)]
    problems += [f"{key!r}: the id is used twice" for key in duplicate_keys(conversations)]
    return problems + case_problems(conversations)


@transaction.atomic
def conversations_import(
    *,
    name: str,
    source: str,
    conversations: Sequence[ImportedConversation],
    responder: str,
    user=None,
) -> ImportedRun:
    """Store `conversations` as an imported run (see the module's contract)."""
    if problems := import_problems(conversations, name=name):
        raise ImportRefused(problems)
    now = timezone.now()
    cases = _cases(conversations)
    benchmark_set = BenchmarkSet.objects.create(
        name=name,
        distribution=None,
        sampler_seed=0,
        size=len(cases),
        generator_model="",
        status=JobStatus.FINISHED,
        imported_from=source[:300],
        created_by=user,
    )
    entries = dict(
        zip(
            cases,
            BenchmarkEntry.objects.bulk_create(
                _entry(benchmark_set, index, members, source)
                for index, members in enumerate(cases.values())
            ),
            strict=True,
        )
    )
    config = {"benchmark_set": benchmark_set.pk, "imported_from": source, "responder": responder}
    run = Run.objects.create(
        name=name,
        benchmark_set=benchmark_set,
        patient_model="",
        patient_prompt_version="",
        roster_model="",
        concurrency=1,
        use_cache=False,
        config=config,
        config_hash=config_hash(config),
        status=JobStatus.FINISHED,
        created_by=user,
        started_at=now,
        finished_at=now,
    )
    agents = _agents(run, conversations, responder)
    stored = Conversation.objects.bulk_create(
        Conversation(
            run=run,
            run_agent=agents[_agent_key(conversation, responder)],
            entry=entries[_case_of(conversation)],
            seed=0,
            repetition=repetition,
            status=ConversationStatus.FINISHED,
            termination_reason=Termination.IMPORTED,
            assistant_turns=conversation.assistant_turns,
            started_at=now,
            finished_at=now,
        )
        for conversation, repetition in zip(
            conversations, _repetitions(conversations, responder), strict=True
        )
    )
    TraceEvent.objects.bulk_create(
        TraceEvent(conversation=row, **event)
        for row, conversation in zip(stored, conversations, strict=True)
        for event in trace_events(conversation)
    )
    keys = [conversation.key for conversation in conversations]
    return ImportedRun(run=run, conversations=dict(zip(keys, stored, strict=True)))


def _agent_key(conversation: ImportedConversation, responder: str) -> tuple[str, str]:
    model = conversation.model or responder
    return model, conversation.label or model


def _agents(run: Run, conversations, responder: str) -> dict[tuple[str, str], RunAgent]:
    """One agent per (model, label) the rows name, in the order they first appear."""
    keys = dict.fromkeys(_agent_key(conversation, responder) for conversation in conversations)
    return {
        (model, label): RunAgent.objects.create(
            run=run, model=model[:200], agent_config=None, label=label[:200]
        )
        for model, label in keys
    }


def conversations_file_import(*, name: str, filename: str, data: bytes, user=None) -> ImportedRun:
    """Your own conversations from JSON Lines (OpenAI chat format, or this site's run export;
    benchmark.engine.chat_import): every line checked first, ImportRefused naming each
    problem with its line, nothing stored on any."""
    try:
        text = decode_text(data)
    except NotText as refused:
        what = "a binary file" if refused.binary else f"not UTF-8 text (line {refused.line})"
        raise ImportRefused([f"{filename} is {what}, not JSON Lines"]) from None
    conversations, problems = read_jsonl(text)
    if problems:
        raise ImportRefused(problems)
    return conversations_import(
        name=name.strip() or filename,
        source=f"JSON Lines: {filename}",
        conversations=conversations,
        responder=FILE_RESPONDER,
        user=user,
    )


def _repetitions(conversations, responder: str) -> list[int]:
    """A model's second conversation on one case is its repetition 1, and so on."""
    seen: Counter = Counter()
    repetitions = []
    for conversation in conversations:
        unit = (_agent_key(conversation, responder), _case_of(conversation))
        repetitions.append(seen[unit])
        seen[unit] += 1
    return repetitions


def _case_of(conversation: ImportedConversation) -> tuple[str, str]:
    return ("case", conversation.case_key) if conversation.case_key else ("", conversation.key)


def _cases(conversations) -> dict[tuple[str, str], list[ImportedConversation]]:
    """The conversations of each case, cases in the order they first appear."""
    cases: dict[tuple[str, str], list[ImportedConversation]] = {}
    for conversation in conversations:
        cases.setdefault(_case_of(conversation), []).append(conversation)
    return cases


def _entry(benchmark_set, index: int, members: list[ImportedConversation], source: str):
    """The case of `members` (they agree on it: import_problems checked), tags of them all."""
    conversation = members[0]
    tags = list(dict.fromkeys(tag for member in members for tag in member.tags))
    source_id = conversation.case_key or conversation.key
    seed = {"imported_from": source, "source_id": source_id, "tags": tags}
    if conversation.instructions:
        seed["assistant_instructions"] = conversation.instructions
    columns = {
        column: str(conversation.case.get(column, ""))[: _max_length(column)]
        for column in CASE_COLUMNS
    }
    return BenchmarkEntry(
        benchmark_set=benchmark_set,
        index=index,
        seed=seed,
        status=EntryStatus.READY,
        profile=dict(conversation.profile),
        story=conversation.story,
        generator_model="",
        complexity=conversation.complexity[: _max_length("complexity")],
        **columns,
    )


def _max_length(column: str) -> int:
    return BenchmarkEntry._meta.get_field(column).max_length
