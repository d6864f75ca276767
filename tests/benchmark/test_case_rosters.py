"""A case's roster is written once per repetition and met by every agent's conversation of it
(benchmark.services.rosters): one roster call per case, the same practice for every agent, and
a claim that lapses with its conversation so no case waits forever."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from benchmark.models import CaseRoster, Conversation, ConversationStatus, ModelCall, Termination
from benchmark.services import rosters
from benchmark.services.conversations import conversation_execute
from benchmark.services.forecasts import run_demands
from benchmark.services.inline import run_execute_inline
from benchmark.services.runs import AgentChoice
from jobs.models import JobStatus
from llm.engine.chat import ProviderError
from tests.benchmark.conftest import FakeRouter, launch, provider_down, use_router

pytestmark = pytest.mark.django_db

OTHER_ROSTER = {"offices": [], "providers": [], "written_by": "another conversation"}


def roster_calls(run) -> int:
    return ModelCall.objects.filter(run=run, purpose="roster").count()


def played(conversation: Conversation) -> Conversation:
    assert conversation_execute(conversation.pk)
    conversation.refresh_from_db()
    return conversation


def case_of(run, conversation: Conversation):
    """Every conversation of `conversation`'s case and repetition, its own first."""
    others = run.conversations.filter(seed=conversation.seed).exclude(pk=conversation.pk)
    return [conversation, *others]


def initial_roster(conversation: Conversation) -> tuple:
    providers = conversation.sandbox_initial["providers"]
    return tuple(sorted(provider["name"] for provider in providers))


def holding(conversation: Conversation) -> CaseRoster:
    """`conversation` running and holding its case's roster claim."""
    Conversation.objects.filter(pk=conversation.pk).update(
        status=ConversationStatus.RUNNING, attempts=1, heartbeat_at=timezone.now()
    )
    return CaseRoster.objects.create(
        run=conversation.run, seed=conversation.seed, claimed_by=conversation, claimed_attempt=1
    )


def test_every_agent_of_a_case_meets_one_roster_paid_once(run):
    for conversation in run.conversations.all():
        played(conversation)
    cases = run.conversations.values("seed").distinct().count()
    assert run.agents.count() == 2 and run.conversations.count() == 2 * cases
    assert roster_calls(run) == cases == CaseRoster.objects.filter(run=run).count()
    for seed in run.conversations.values_list("seed", flat=True).distinct():
        met = {initial_roster(c) for c in run.conversations.filter(seed=seed)}
        assert len(met) == 1


def test_a_replayed_conversation_plays_on_its_case_roster_without_a_call(run, monkeypatch):
    first = played(run.conversations.order_by("pk").first())
    Conversation.objects.filter(pk=first.pk).update(status=ConversationStatus.PENDING)
    use_router(monkeypatch, provider_down("roster"))  # a roster call would fail it
    again = played(first)
    assert again.status == ConversationStatus.FINISHED
    assert initial_roster(again) == initial_roster(first) and roster_calls(run) == 1


def test_a_failed_roster_call_leaves_the_case_to_the_next_conversation(run, monkeypatch):
    mine, other = case_of(run, run.conversations.order_by("pk").first())[:2]
    use_router(monkeypatch, provider_down("roster"))
    assert played(mine).termination_reason == Termination.PROVIDER_ERROR
    assert CaseRoster.objects.get(run=run, seed=mine.seed).claimed_by is None
    use_router(monkeypatch, FakeRouter())
    assert played(other).status == ConversationStatus.FINISHED
    assert CaseRoster.objects.get(run=run, seed=mine.seed).roster is not None


@pytest.mark.parametrize(
    "lapse",
    [
        {"status": ConversationStatus.FAILED},
        {"status": ConversationStatus.PENDING},  # the run's watch took it back from a dead worker
        {"heartbeat_at": timezone.now() - timedelta(days=1)},  # its worker stopped reporting
        {"attempts": 2},  # it was handed out again since it claimed
    ],
    ids=["failed", "taken-back", "silent", "newer-attempt"],
)
def test_a_lapsed_claim_is_taken_over(run, lapse):
    mine, claimer = case_of(run, run.conversations.order_by("pk").first())[:2]
    holding(claimer)
    Conversation.objects.filter(pk=claimer.pk).update(**lapse)
    assert played(mine).status == ConversationStatus.FINISHED
    row = CaseRoster.objects.get(run=run, seed=mine.seed)
    assert row.claimed_by_id == mine.pk and row.roster is not None and roster_calls(run) == 1


def test_a_conversation_waits_for_the_roster_a_live_claim_is_writing(run, monkeypatch):
    mine, claimer = case_of(run, run.conversations.order_by("pk").first())[:2]
    row = holding(claimer)
    waits = []

    def claimer_writes(seconds):  # what the claimer does while this conversation waits
        waits.append(seconds)
        if len(waits) == 2:
            CaseRoster.objects.filter(pk=row.pk).update(roster=played_roster(run, mine))

    monkeypatch.setattr(rosters, "_pause", claimer_writes)
    assert played(mine).status == ConversationStatus.FINISHED
    assert waits == [rosters.FIRST_POLL_SECONDS, rosters.FIRST_POLL_SECONDS * 2]
    assert roster_calls(run) == 0  # it wrote none of its own


def played_roster(run, conversation) -> dict:
    """A valid roster for `conversation`'s case, as the claimer would have written it."""
    from benchmark.engine.sandbox.roster import generate_roster
    from llm.clients import ModelRouter

    roster, _ = generate_roster(
        ModelRouter(use_cache=False), conversation.entry.profile,
        model=run.roster_model, seed=conversation.seed,
    )  # fmt: skip
    return roster


def test_a_run_cancelled_while_waiting_for_the_roster_cancels_the_conversation(run, monkeypatch):
    mine, claimer = case_of(run, run.conversations.order_by("pk").first())[:2]
    holding(claimer)
    cancelled = {}

    def researcher_cancels(seconds):
        cancelled.setdefault("at", type(run).objects.filter(pk=run.pk).update(status="cancelled"))

    monkeypatch.setattr(rosters, "_pause", researcher_cancels)
    monkeypatch.setattr("benchmark.services.conversations.CANCEL_CHECK_SECONDS", 0.0)
    ended = played(mine)
    assert ended.status == ConversationStatus.CANCELLED
    assert "waiting for the case's roster" in ended.error
    assert CaseRoster.objects.get(run=run, seed=mine.seed).claimed_by_id == claimer.pk


@pytest.mark.django_db(transaction=True)
def test_agents_playing_a_case_at_once_pay_its_roster_once(ready_set, baseline, monkeypatch):
    """Two threads start the case's two conversations together; the roster call is held until
    the second conversation is running too, so both want the roster at the same moment."""
    run = launch(ready_set, baseline, models=("offline/careful", "offline/careless"))
    run.conversations.exclude(seed=run.conversations.first().seed).delete()
    both_running = threading.Event()

    class SlowRoster(FakeRouter):
        def chat(self, request):
            if request.purpose == "roster" and not both_running.is_set():
                deadline = timezone.now() + timedelta(seconds=60)
                while timezone.now() < deadline and not both_running.is_set():
                    running = run.conversations.filter(status=ConversationStatus.RUNNING)
                    if running.count() == 2:
                        both_running.set()
                    both_running.wait(0.05)
            return super().chat(request)

    use_router(monkeypatch, SlowRoster())
    run_execute_inline(run, threads=2)
    assert both_running.is_set()
    statuses = set(run.conversations.values_list("status", flat=True))
    assert statuses == {ConversationStatus.FINISHED} and roster_calls(run) == 1
    assert len({initial_roster(c) for c in run.conversations.all()}) == 1


def test_the_forecast_counts_one_roster_per_case_and_repetition(run, baseline):
    for conversation in run.conversations.all():
        played(conversation)
    run.status = JobStatus.FINISHED
    run.save(update_fields=["status"])
    agents = [AgentChoice(f"offline/{name}", baseline) for name in ("careful", "careless")]
    demands, _ = run_demands(
        benchmark_set=run.benchmark_set, agents=agents, patient_model="offline/patient",
        repetitions=3, source=run,
    )  # fmt: skip
    by_role = {demand.role: demand for demand in demands}
    cases = run.benchmark_set.entries.count()
    assert by_role["roster"].units == cases * 3
    assert by_role["patient"].units == cases * 3 * 2
    # Learnt from the conversation of each case that wrote its roster, not from every one.
    assert len(by_role["roster"].observed) == cases


def test_of_two_conversations_taking_over_one_lapsed_claim_only_the_first_gets_it(run):
    mine, claimer = case_of(run, run.conversations.order_by("pk").first())[:2]
    third = run.conversations.exclude(seed=mine.seed).first()  # any other conversation
    holding(claimer)
    Conversation.objects.filter(pk=claimer.pk).update(status=ConversationStatus.FAILED)
    for conversation in (mine, third):
        Conversation.objects.filter(pk=conversation.pk).update(attempts=1)
        conversation.refresh_from_db()
    looks = CaseRoster.objects.filter(run=run, seed=mine.seed).select_related("claimed_by")
    seen_by_mine, seen_by_third = looks.get(), looks.get()  # both read the lapsed claim
    assert not rosters._held(seen_by_mine) and not rosters._held(seen_by_third)
    assert rosters._taken_over(seen_by_mine, mine)
    assert not rosters._taken_over(seen_by_third, third)  # the row changed since it looked
    assert looks.get().claimed_by_id == mine.pk


def test_a_superseded_attempt_that_fails_leaves_the_newer_attempts_claim(run):
    mine = run.conversations.order_by("pk").first()
    row = holding(mine)
    Conversation.objects.filter(pk=mine.pk).update(attempts=2)  # handed out again
    CaseRoster.objects.filter(pk=row.pk).update(claimed_attempt=2)  # and it claimed anew
    mine.refresh_from_db()
    mine.attempts = 1  # the old attempt, still running somewhere
    with pytest.raises(ProviderError, match="503"):
        rosters._write(row, mine, provider_down("roster"))
    row.refresh_from_db()
    assert (row.claimed_by_id, row.claimed_attempt) == (mine.pk, 2)


def test_a_replay_plays_its_cases_rosters_and_the_forecast_learns_rosters_past_it(run, baseline):
    from benchmark.services.replays import run_replay

    for conversation in run.conversations.all():
        played(conversation)
    run.status = JobStatus.FINISHED
    run.save(update_fields=["status"])
    replay = run_replay(run, conversations=list(run.conversations.order_by("pk")[:2]))
    for conversation in replay.conversations.all():
        assert played(conversation).status == ConversationStatus.FINISHED
        original = run.conversations.get(
            seed=conversation.seed, run_agent__label=conversation.run_agent.label
        )
        assert initial_roster(conversation) == initial_roster(original)
    assert roster_calls(replay) == 0
    replay.status = JobStatus.FINISHED
    replay.save(update_fields=["status"])

    agents = [AgentChoice("offline/careful", baseline)]
    demands, note = run_demands(
        benchmark_set=run.benchmark_set, agents=agents, patient_model="offline/patient"
    )
    assert f"run {replay.pk}" in note  # the newest finished run, which wrote no roster
    roster = next(demand for demand in demands if demand.role == "roster")
    assert roster.observed and f"run {run.pk}" in roster.basis
