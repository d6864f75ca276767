"""Runs: launch, dispatch with bounded concurrency, pause, cancel, resume, cost limit, finish."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from benchmark.models import (
    Conversation,
    ConversationStatus,
    EntryStatus,
    ModelCall,
    Run,
    Termination,
)
from benchmark.services import cases, runs
from benchmark.services.conversations import conversation_execute
from jobs.models import JobStatus
from tests.benchmark.conftest import SET_SIZE, launch, make_set, priced_router, use_router
from tests.support.builders import enriched_set, launched_run

pytestmark = pytest.mark.django_db


def dispatch(run) -> list[int]:
    return runs.run_dispatch(run, lambda ids: None)


def statuses(run) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in run.conversations.values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def drain(run) -> None:
    """What the workers do: execute whatever dispatch hands out until it hands out nothing."""
    while claimed := dispatch(run):
        for conversation_id in claimed:
            conversation_execute(conversation_id)


def fail_as(run, termination: str, count: int = 1) -> list[int]:
    ids = list(run.conversations.values_list("id", flat=True)[:count])
    Conversation.objects.filter(id__in=ids).update(
        status=ConversationStatus.FAILED, termination_reason=termination, error="boom"
    )
    return ids


def test_launch_creates_one_conversation_per_case_agent_and_repetition(ready_set, baseline):
    run = launch(ready_set, baseline, models=("offline/careful", "offline/careless"), repetitions=2)
    conversations = run.conversations.all()
    assert conversations.count() == SET_SIZE * 2 * 2
    # Agents share the seed of each (case, repetition): paired comparisons face one sandbox.
    seeds = {(c.entry_id, c.repetition): set() for c in conversations}
    for c in conversations:
        seeds[(c.entry_id, c.repetition)].add(c.seed)
    assert all(len(s) == 1 for s in seeds.values())
    assert len({s.pop() for s in seeds.values()}) == SET_SIZE * 2
    assert {c.status for c in conversations} == {ConversationStatus.PENDING}
    assert {c.clock for c in conversations} == {conversations[0].clock}
    assert run.status == JobStatus.RUNNING
    assert [a.label for a in run.agents.all()] == [
        "offline/careful · baseline",
        "offline/careless · baseline",
    ]


def test_launch_skips_entries_that_failed_enrichment(ready_set, baseline):
    ready_set.entries.filter(index=0).update(status=EntryStatus.FAILED)
    run = launch(ready_set, baseline)
    assert run.conversations.count() == SET_SIZE - 1


def test_the_same_launch_inputs_give_the_same_conversation_seeds(ready_set, baseline):
    first = launch(ready_set, baseline, seed=3)
    second = launch(ready_set, baseline, seed=3)
    other = launch(ready_set, baseline, seed=4)
    seeds = [list(r.conversations.values_list("seed", flat=True)) for r in (first, second, other)]
    assert seeds[0] == seeds[1] != seeds[2]


def test_the_config_hash_covers_the_stored_config(run):
    assert run.config_hash == runs.config_hash(run.config)
    assert run.config["patient_prompt_version"] == run.patient_prompt_version
    assert {a["model"] for a in run.config["agents"]} == {"offline/careful", "offline/careless"}


def test_check_config_accepts_the_same_config(run):
    runs.run_check_config(run, dict(run.config))


def test_check_config_refuses_a_changed_config_and_names_what_changed(run):
    changed = {**run.config, "max_turns": 3, "patient_model": "offline/other"}
    with pytest.raises(runs.RunError, match="changed: max_turns, patient_model"):
        runs.run_check_config(run, changed)


def test_it_refuses_a_launch_with_the_same_agent_twice(ready_set, baseline):
    with pytest.raises(runs.RunError, match="twice"):
        launch(ready_set, baseline, models=("offline/careful", "offline/careful"))


def test_it_refuses_a_launch_on_a_set_with_no_ready_entries(distribution, baseline):
    with pytest.raises(runs.RunError, match="no ready entries"):
        launch(make_set(distribution), baseline)


def test_dispatch_claims_at_most_the_concurrency_and_never_the_same_twice(run):
    run.concurrency = 4
    run.save()
    first = dispatch(run)
    second = dispatch(run)
    assert len(first) == 4 and second == []
    assert statuses(run)[ConversationStatus.QUEUED] == 4
    Conversation.objects.filter(id__in=first[:2]).update(status=ConversationStatus.FINISHED)
    third = dispatch(run)
    assert len(third) == 2 and not set(third) & set(first)


def test_dispatch_hands_claimed_work_to_the_queue_after_commit(
    run, django_capture_on_commit_callbacks
):
    enqueued = []
    with django_capture_on_commit_callbacks(execute=True):
        claimed = runs.run_dispatch(run, enqueued.append)
    assert enqueued == [claimed]


def test_pausing_stops_dispatch_and_puts_queued_work_back(run):
    dispatch(run)
    runs.run_pause(run)
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED and "Paused" in run.stop_reason
    assert set(statuses(run)) == {ConversationStatus.PENDING}
    assert dispatch(run) == []


def test_cancelling_marks_waiting_work_cancelled(run):
    dispatch(run)
    runs.run_cancel(run)
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.finished_at
    assert set(run.conversations.values_list("status", "termination_reason")) == {
        (ConversationStatus.CANCELLED, Termination.CANCELLED)
    }
    assert dispatch(run) == []


def test_resume_after_cancel_puts_cancelled_work_back_to_pending(run):
    runs.run_cancel(run)
    runs.run_resume(run)
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING and run.stop_reason == ""
    assert set(run.conversations.values_list("status", "termination_reason")) == {
        (ConversationStatus.PENDING, "")
    }


def test_resume_retries_provider_failures_only_when_asked(run):
    failed = fail_as(run, Termination.PROVIDER_ERROR, 2)
    runs.run_pause(run)
    runs.run_resume(run)
    assert set(Conversation.objects.filter(id__in=failed).values_list("status", flat=True)) == {
        ConversationStatus.FAILED
    }
    runs.run_resume(run, retry_failed=True)
    retried = Conversation.objects.filter(id__in=failed)
    assert set(retried.values_list("status", "termination_reason", "error")) == {
        (ConversationStatus.PENDING, "", "")
    }


def test_resume_never_retries_agent_errors(run):
    failed = fail_as(run, Termination.AGENT_ERROR)
    runs.run_resume(run, retry_failed=True)
    assert Conversation.objects.get(id=failed[0]).status == ConversationStatus.FAILED


def test_resume_refuses_when_the_patient_prompt_changed(run):
    run.patient_prompt_version = "an-older-prompt"
    run.save()
    with pytest.raises(runs.RunError, match="patient prompt changed"):
        runs.run_resume(run)


def test_a_running_conversation_with_a_stale_heartbeat_is_recovered(run):
    run.concurrency = 1
    run.save()
    [lost] = dispatch(run)
    Conversation.objects.filter(pk=lost).update(
        status=ConversationStatus.RUNNING,
        heartbeat_at=timezone.now() - runs.lease() - timedelta(seconds=1),
    )
    assert dispatch(run) == [lost]


def test_a_running_conversation_with_a_fresh_heartbeat_is_left_alone(run):
    run.concurrency = 1
    run.save()
    [busy] = dispatch(run)
    Conversation.objects.filter(pk=busy).update(status=ConversationStatus.RUNNING)
    assert dispatch(run) == []
    assert Conversation.objects.get(pk=busy).status == ConversationStatus.RUNNING


def test_the_cost_limit_stops_launching_work(ready_set, baseline, monkeypatch):
    use_router(monkeypatch, priced_router("0.50"))
    run = launch(
        ready_set,
        baseline,
        models=("openai/gpt-4o-mini",),
        cost_limit_usd=Decimal("1.00"),
        concurrency=1,
    )
    [first] = dispatch(run)
    assert conversation_execute(first)
    assert ModelCall.objects.filter(run=run, purpose="assistant").exists()
    assert dispatch(run) == []
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED
    assert "Cost limit reached" in run.stop_reason
    assert statuses(run)[ConversationStatus.PENDING] == SET_SIZE - 1


def test_raising_the_cost_limit_on_resume_continues_the_run(ready_set, baseline):
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("0.01"))
    ModelCall.objects.create(
        run=run, purpose="assistant", model="openai/gpt-4o-mini", cost_usd=Decimal("0.02")
    )
    assert dispatch(run) == []
    runs.run_resume(run, cost_limit_usd=Decimal("5"))
    assert len(dispatch(run)) == SET_SIZE


def test_unpriced_calls_do_not_count_towards_the_cost_limit(ready_set, baseline):
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("0.01"))
    ModelCall.objects.create(run=run, purpose="assistant", model="openai-compatible/x")
    assert len(dispatch(run)) == SET_SIZE


def test_a_run_finishes_when_nothing_is_left(run):
    drain(run)
    run.refresh_from_db()
    progress = runs.run_progress(run)
    assert run.status == JobStatus.FINISHED and run.finished_at
    assert progress["finished"] == progress["total"] == SET_SIZE * 2
    assert progress["percent"] == 100.0
    assert progress["cost"] == 0  # offline calls are priced at zero
    assert sum(progress["terminations"].values()) == SET_SIZE * 2


def test_a_run_does_not_finish_while_work_is_in_flight(run):
    claimed = dispatch(run)
    for conversation_id in claimed[1:]:
        conversation_execute(conversation_id)
    Conversation.objects.exclude(id=claimed[0]).update(status=ConversationStatus.FINISHED)
    assert dispatch(run) == []
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


def test_progress_counts_every_status(run):
    run.concurrency = 2
    run.save()
    dispatch(run)
    progress = runs.run_progress(run)
    assert (progress["queued"], progress["pending"], progress["total"]) == (
        2,
        SET_SIZE * 2 - 2,
        SET_SIZE * 2,
    )
    assert progress["percent"] == 0.0


def test_every_entry_of_a_set_can_be_run_after_retrying_enrichment(ready_set, baseline):
    ready_set.entries.filter(index=0).update(status=EntryStatus.FAILED)
    cases.benchmark_set_retry_failed(ready_set)
    for entry_id in cases.pending_entry_ids(ready_set):
        cases.entry_enrich(entry_id)
    assert launch(ready_set, baseline).conversations.count() == SET_SIZE


def test_a_run_whose_last_conversation_crosses_the_cost_limit_still_finishes(
    ready_set, baseline, monkeypatch
):
    use_router(monkeypatch, priced_router("0.50"))
    run = launch(ready_set, baseline, models=("openai/gpt-4o-mini",),
                 cost_limit_usd=Decimal("1.00"), concurrency=SET_SIZE)  # fmt: skip
    for conversation_id in dispatch(run):
        assert conversation_execute(conversation_id)
    assert dispatch(run) == []
    run.refresh_from_db()
    assert run.status == JobStatus.FINISHED


def test_a_cost_limit_pause_puts_queued_conversations_back_to_pending(
    ready_set, baseline, monkeypatch
):
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("0.01"), concurrency=2)
    queued = dispatch(run)
    ModelCall.objects.create(
        run=run, purpose="assistant", model="openai/gpt-4o-mini", cost_usd=Decimal("0.02")
    )
    assert dispatch(run) == []
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED
    assert set(queued) <= set(
        run.conversations.filter(status=ConversationStatus.PENDING).values_list("id", flat=True)
    )


@pytest.mark.parametrize(
    ("model", "patient", "complaint"),
    [
        ("offline/carefull", "offline/patient", "unknown offline behaviour 'carefull'"),
        ("offline/careful", "offline/nope", "unknown offline behaviour 'nope'"),
        ("acme/model-1", "offline/patient", "acme"),
    ],
)
def test_a_run_with_an_unknown_model_is_refused_whichever_door_it_comes_through(
    model, patient, complaint
):
    from benchmark.services.runs import RunError

    benchmark_set = enriched_set(name="doors", size=1, sampler_seed=2)
    with pytest.raises(RunError, match=complaint):
        launched_run(benchmark_set, models=(model,), patient_model=patient)
    assert not Run.objects.filter(benchmark_set=benchmark_set).exists()
