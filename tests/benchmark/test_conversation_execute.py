"""Playing one conversation: idempotent, traced, replayable, and failures kept visible."""

import pytest

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.roster import generate_roster
from benchmark.models import (
    CaseRoster,
    Conversation,
    ConversationStatus,
    ModelCall,
    Termination,
    TraceEvent,
)
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute
from llm.clients import ModelRouter
from llm.engine.providers.redaction import UNEXPECTED_FAILURE
from tests.benchmark.conftest import FakeRouter, provider_down, use_router

pytestmark = pytest.mark.django_db


def first_of(run, model="offline/careful") -> Conversation:
    return run.conversations.filter(run_agent__model=model).order_by("entry__index").first()


def played(conversation: Conversation) -> Conversation:
    assert conversation_execute(conversation.pk)
    conversation.refresh_from_db()
    return conversation


def trace(conversation: Conversation) -> list[tuple]:
    return list(conversation.events.values_list("event_id", "kind", "tool_name", "content"))


def test_it_plays_a_conversation_to_its_end(run):
    conversation = played(first_of(run))
    assert conversation.status == ConversationStatus.FINISHED
    assert conversation.termination_reason == Termination.PATIENT_ENDED
    assert conversation.assistant_turns >= 1 and conversation.attempts == 1
    assert conversation.finished_at and conversation.error == ""


def test_executing_twice_runs_it_once(run):
    conversation = played(first_of(run))
    events, calls = conversation.events.count(), ModelCall.objects.count()
    assert conversation_execute(conversation.pk) is False
    conversation.refresh_from_db()
    assert (conversation.events.count(), ModelCall.objects.count()) == (events, calls)
    assert conversation.attempts == 1


def test_it_does_not_run_a_conversation_of_a_paused_run(run):
    runs.run_pause(run)
    assert conversation_execute(first_of(run).pk) is False
    assert first_of(run).status == ConversationStatus.PENDING


def test_trace_events_have_unique_ids_in_conversation_order(run):
    conversation = played(first_of(run))
    events = list(conversation.events.all())
    ids = [e.event_id for e in events]
    assert len(set(ids)) == len(ids) > 3
    assert [e.seq for e in events] == list(range(len(events)))
    assert ids == sorted(ids)
    assert events[0].kind == "patient_message"
    assert {"assistant_message", "tool_call", "tool_result"} <= {e.kind for e in events}


def test_replaying_a_conversation_gives_the_same_event_ids_and_content(run):
    conversation = played(first_of(run))
    before = trace(conversation)
    Conversation.objects.filter(pk=conversation.pk).update(status=ConversationStatus.PENDING)
    again = played(conversation)
    assert trace(again) == before
    assert again.attempts == 2
    assert TraceEvent.objects.filter(conversation=again).count() == len(before)


def test_tool_calls_keep_their_arguments_and_results_their_outcome(run):
    conversation = played(first_of(run))
    call = conversation.events.filter(kind="tool_call").first()
    result = conversation.events.get(kind="tool_result", tool_call_id=call.tool_call_id)
    assert isinstance(call.arguments, dict)
    assert result.tool_name == call.tool_name and result.ok is not None


def test_write_actions_and_the_final_state_hash_are_stored(run):
    conversation = played(first_of(run))
    final = Sandbox.from_json(conversation.sandbox_final)
    assert conversation.write_actions and conversation.write_actions == final.write_actions
    assert conversation.final_state_hash == final.state_hash()
    assert (
        conversation.final_state_hash
        != Sandbox.from_json(conversation.sandbox_initial).state_hash()
    )


def test_the_initial_sandbox_snapshot_equals_a_fresh_build(run):
    conversation = played(first_of(run))
    entry = conversation.entry
    roster, _ = generate_roster(
        ModelRouter(use_cache=False), entry.profile, model=run.roster_model, seed=conversation.seed
    )
    fresh = Sandbox.build(
        profile=entry.profile, roster=roster, seed=conversation.seed, now=conversation.clock
    )
    replayed = Sandbox.from_json(conversation.sandbox_initial)
    assert replayed.to_json() == fresh.to_json()
    assert replayed.state_hash() == fresh.state_hash()


def test_every_model_call_is_accounted_by_purpose(run):
    conversation = played(first_of(run))
    calls = ModelCall.objects.filter(conversation=conversation)
    assert {c.purpose for c in calls} == {"roster", "patient", "assistant"}
    assert all(c.run_id == run.pk for c in calls)
    assert sum(c.input_tokens for c in calls) == conversation.input_tokens > 0
    assert conversation.cost_usd == 0 and conversation.cost_known
    assert set(conversation.usage) == {"patient", "assistant"}


def test_an_unknown_price_leaves_the_conversation_cost_unknown(run, monkeypatch):
    use_router(monkeypatch, FakeRouter(price=None))
    conversation = played(first_of(run))
    assert conversation.cost_usd is None and conversation.cost_known is False
    assert runs.run_progress(run)["cost"] is None


def test_a_roster_provider_failure_ends_as_a_provider_error(run, monkeypatch):
    use_router(monkeypatch, provider_down("roster"))
    conversation = played(first_of(run))
    assert conversation.status == ConversationStatus.FAILED
    assert conversation.termination_reason == Termination.PROVIDER_ERROR
    assert "roster generation" in conversation.error and "503" in conversation.error
    assert conversation.events.count() == 0 and conversation.sandbox_final is None


def test_an_assistant_provider_failure_keeps_the_trace_so_far(run, monkeypatch):
    use_router(monkeypatch, provider_down("assistant"))
    conversation = played(first_of(run))
    assert conversation.status == ConversationStatus.FAILED
    assert conversation.termination_reason == Termination.PROVIDER_ERROR
    assert conversation.events.filter(kind="patient_message").exists()
    assert conversation.sandbox_initial is not None


def test_an_unexpected_exception_ends_as_an_infrastructure_error(run, monkeypatch):
    use_router(monkeypatch, FakeRouter(fail={"roster": RuntimeError("disk full")}))
    conversation = played(first_of(run))
    assert conversation.status == ConversationStatus.FAILED
    assert conversation.termination_reason == Termination.INFRASTRUCTURE
    assert conversation.error == UNEXPECTED_FAILURE  # the traceback is in the log


def test_a_retried_failure_replaces_the_earlier_attempt(run, monkeypatch):
    conversation = played(first_of(run))
    Conversation.objects.filter(pk=conversation.pk).update(status=ConversationStatus.PENDING)
    # The retry must write the case's roster again (it fails there): a retry that finds it
    # written plays on the same one (test_case_rosters).
    CaseRoster.objects.filter(run=run).delete()
    use_router(monkeypatch, provider_down("roster"))
    failed = played(conversation)
    assert failed.events.count() == 0
    assert (failed.sandbox_initial, failed.sandbox_final, failed.write_actions) == (None, None, [])
    assert failed.final_state_hash == "" and failed.assistant_turns == 0


def test_careful_and_careless_agents_change_the_sandbox_differently(run):
    for conversation in run.conversations.all():
        conversation_execute(conversation.pk)
    writes = {
        model: [c.write_actions for c in run.conversations.filter(run_agent__model=model)]
        for model in ("offline/careful", "offline/careless")
    }
    assert writes["offline/careful"] != writes["offline/careless"]
    assert all(writes["offline/careful"]) and all(writes["offline/careless"])
