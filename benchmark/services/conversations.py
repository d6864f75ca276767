"""Play one conversation (the unit of work) and store its trace.

Idempotent: a conversation that is finished, cancelled or running elsewhere is left alone.
Nothing is written until the conversation ends, so a worker crash loses only that
conversation's progress, and the retry starts it from the beginning.
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache, partial

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchmark.engine.agents.agent_config import parse_agent_config
from benchmark.engine.agents.loop import CaseInput, ConversationOutcome, run_conversation
from benchmark.engine.sandbox.builds import sandbox_start
from benchmark.engine.sandbox.state import EncodedJSON
from benchmark.models import (
    Conversation,
    ConversationStatus,
    ModelCall,
    Run,
    Termination,
    TraceEvent,
)
from benchmark.services.rosters import RosterWaitCancelled, case_roster
from common.inserts import rows_insert
from jobs.models import JobStatus
from jobs.services import accounting
from jobs.services.leases import CONNECTION_LOST, Heartbeat, connection_checked
from jobs.services.processes import holder_fields, this_process
from jobs.services.retries import retry_fields
from llm.clients import model_router
from llm.engine.chat import ProviderError
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import StructuredFailure
from llm.services import prices

logger = logging.getLogger(__name__)

STATUS_FOR = {
    Termination.CANCELLED: ConversationStatus.CANCELLED,
    Termination.PROVIDER_ERROR: ConversationStatus.FAILED,
    Termination.INFRASTRUCTURE: ConversationStatus.FAILED,
}
CANCEL_CHECK_SECONDS = 2.0


def conversation_execute(conversation_id: int) -> bool:
    """Run the conversation if it is waiting; returns whether it ran here."""
    claimed = Conversation.objects.filter(
        pk=conversation_id,
        status__in=(ConversationStatus.QUEUED, ConversationStatus.PENDING),
        run__status=JobStatus.RUNNING,
    ).update(
        status=ConversationStatus.RUNNING,
        attempts=F("attempts") + 1,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        **holder_fields(this_process()),
    )
    if not claimed:
        return False
    conversation = (
        Conversation.objects.select_related("run", "run_agent__agent_config", "entry")
        # The prices in force are named with the row: a query of their own cost every
        # conversation a statement (a grouped one) while they stay as they were.
        .annotate(prices_stamp=prices.prices_stamp())
        .get(pk=conversation_id)
    )
    recorder = accounting.RecordingClient(
        model_router(
            conversation.run.use_cache,
            overrides=prices.price_overrides_as_of(conversation.prices_stamp),
        ),
        owner=partial(ModelCall, run=conversation.run, conversation=conversation),
    )
    with Heartbeat(partial(_refresh_heartbeat, conversation), label=str(conversation.public_id)):
        try:
            outcome, initial = _play(conversation, recorder)
            _save_outcome(conversation, outcome, initial, recorder)
        except _SetupFailed as failure:
            logger.warning("conversation %s not started: %s", conversation.public_id, failure)
            _save_failure(conversation, failure.termination, str(failure), recorder)
        except CONNECTION_LOST:
            # Not the conversation's failure: it stays running without a heartbeat, and the
            # run's watch plays it again from its start once its lease runs out.
            logger.warning("conversation %s lost the database", conversation.public_id)
            raise
        except Exception as error:  # anything unexpected is an infrastructure failure, kept
            logger.exception("conversation %s failed outside the loop", conversation.public_id)
            message = failure_text(error)
            _save_failure(conversation, Termination.INFRASTRUCTURE, message, recorder)
    return True


def _play(
    conversation: Conversation, client
) -> tuple[ConversationOutcome | None, EncodedJSON | None]:
    run, entry = conversation.run, conversation.entry
    clock = conversation.clock
    should_stop = _cancel_watch(run)
    try:
        roster = case_roster(conversation, client, should_stop=should_stop)
    except RosterWaitCancelled as cancelled:
        raise _SetupFailed(Termination.CANCELLED, str(cancelled)) from cancelled
    except ProviderError as error:
        raise _SetupFailed(
            Termination.PROVIDER_ERROR, f"roster generation: {failure_text(error)}"
        ) from error
    except StructuredFailure as failure:
        raise _SetupFailed(
            Termination.INFRASTRUCTURE, f"roster generation: {failure.reason}"
        ) from failure
    sandbox, initial = sandbox_start(entry.profile, roster, conversation.seed, clock)
    outcome = run_conversation(
        case=CaseInput(profile=entry.profile, story=entry.story, seed=entry.seed),
        sandbox=sandbox,
        patient_client=client,
        assistant_client=client,
        patient_model=run.patient_model,
        assistant_model=conversation.run_agent.model,
        agent=_agent_config(conversation.run_agent.agent_config.yaml_text),
        now=clock,
        max_turns=run.max_turns,
        should_stop=should_stop,
        sample=f"conversation-seed:{conversation.seed}",
    )
    return outcome, initial


@lru_cache(maxsize=32)
def _agent_config(yaml_text: str):
    # Parsed once per process and configuration (every conversation of a run plays one of a
    # few): its prompt file is read once per process, as the patient's prompt is
    # (prompts.default_patient_prompt).
    return parse_agent_config(yaml_text)


class _SetupFailed(Exception):
    def __init__(self, termination: str, message: str):
        super().__init__(message)
        self.termination = termination


def _cancel_watch(run: Run):
    """should_stop for the loop: asks the database at most every CANCEL_CHECK_SECONDS."""
    # The claim found the run running a moment ago: the first look is due a period later.
    state = {"checked": time.monotonic(), "stop": False}

    def should_stop() -> bool:
        now = time.monotonic()
        if not state["stop"] and now - state["checked"] > CANCEL_CHECK_SECONDS:
            state["checked"] = now
            try:
                status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
            except CONNECTION_LOST:  # the database restarting: ask again next time
                logger.warning("cancel check of run %s could not reach the database", run.pk)
                return False
            state["stop"] = status == JobStatus.CANCELLED
        return state["stop"]

    return should_stop


def _refresh_heartbeat(conversation: Conversation) -> None:
    _this_attempt(conversation).update(heartbeat_at=timezone.now())


def _this_attempt(conversation: Conversation):
    """The conversation row, only while this attempt still owns it."""
    return Conversation.objects.filter(
        pk=conversation.pk, status=ConversationStatus.RUNNING, attempts=conversation.attempts
    )


def _save_outcome(
    conversation, outcome: ConversationOutcome, initial: EncodedJSON, recorder
) -> None:
    sandbox = outcome.sandbox
    reason = outcome.termination_reason
    # Everything is built before the transaction: it holds the database write lock.
    events = [_trace_row(conversation, seq, event) for seq, event in enumerate(outcome.events)]
    final, final_hash = sandbox.snapshot_and_hash()
    fields = _apply(
        conversation,
        status=STATUS_FOR.get(reason, ConversationStatus.FINISHED),
        termination_reason=reason,
        error=outcome.error,
        sandbox_initial=initial,
        sandbox_final=final,
        final_state_hash=final_hash,
        write_actions=list(sandbox.write_actions),
        assistant_turns=outcome.assistant_turns,
        usage=_json_usage(outcome.usage),
        recorder=recorder,
    )
    calls = accounting.unwritten_rows(recorder)
    _store(conversation, fields, events, calls)


def _save_failure(conversation, termination: str, message: str, recorder) -> None:
    # Clear whatever an earlier attempt stored, so no field describes a different attempt.
    fields = _apply(
        conversation,
        status=STATUS_FOR.get(termination, ConversationStatus.FAILED),  # cancelled stays so
        termination_reason=termination,
        error=message,
        sandbox_initial=None,
        sandbox_final=None,
        final_state_hash="",
        write_actions=[],
        assistant_turns=0,
        usage={},
        recorder=recorder,
    )
    calls = accounting.unwritten_rows(recorder)
    _store(conversation, fields, [], calls)


def _store(
    conversation: Conversation, fields: dict, events: list[TraceEvent], calls: list[ModelCall]
) -> None:
    """Write this attempt's outcome, unless a newer attempt has taken the conversation over.

    A superseded attempt (its lease expired and the conversation was handed out again) keeps
    only its model-call accounting: the money was spent, but its trace must not overwrite the
    attempt that now owns the row. `fields`: the conversation's outcome to set. `calls` are
    those not written as they were answered.
    """
    connection_checked()  # minutes may have passed since the connection was last used
    with transaction.atomic():
        ModelCall.objects.bulk_create(calls, ignore_conflicts=True)
        # The outcome in one UPDATE guarded by the attempt: it locks the row as it checks
        # that this attempt still owns it, and writes only the fields the outcome sets.
        if not _this_attempt(conversation).update(**fields):
            logger.warning(
                "attempt %s of %s was superseded; outcome discarded",
                conversation.attempts,
                conversation.public_id,
            )
            return
        if conversation.attempts > 1:  # only an earlier attempt can have left a trace
            conversation.events.all().delete()
        rows_insert(events)


def _apply(conversation: Conversation, *, recorder, **fields) -> dict:
    """Set the outcome fields and the token/cost totals on the (unsaved) conversation;
    returns them, for the UPDATE that stores them."""
    sums = accounting.totals(response for _, response in recorder.calls)
    fields.update(
        input_tokens=sums["input_tokens"],
        output_tokens=sums["output_tokens"],
        cost_usd=sums["cost_usd"],
        cost_known=sums["cost_usd"] is not None,
        finished_at=timezone.now(),
        **retry_fields(recorder.retries),
    )
    for name, value in fields.items():
        setattr(conversation, name, value)
    return fields


def _trace_row(conversation: Conversation, seq: int, event) -> TraceEvent:
    fields = {name: getattr(event, name) for name in TraceEvent.ENGINE_FIELDS}
    return TraceEvent(conversation=conversation, seq=seq, **fields)


def _json_usage(usage: dict) -> dict:
    return {
        role: {
            **values,
            "cost_usd": None if values.get("cost_usd") is None else str(values["cost_usd"]),
        }
        for role, values in usage.items()
    }
