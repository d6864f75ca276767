"""Benchmark sets: reproducible sampling and the enrichment of each entry."""

from decimal import Decimal

import pytest

from benchmark.engine.sampler import sample_seeds
from benchmark.models import BenchmarkEntry, EntryStatus, ModelCall
from benchmark.services import cases
from jobs.models import JobStatus
from jobs.services import accounting
from llm.engine.chat import ChatResponse
from llm.engine.providers.redaction import UNEXPECTED_FAILURE
from tests.benchmark.conftest import FakeRouter, enrich_all, make_set, provider_down, use_router

pytestmark = pytest.mark.django_db


class NeverValid:
    """An enrichment model that always answers with something that is not an entry."""

    def __init__(self):
        self.calls = 0

    def chat(self, request):
        self.calls += 1
        return ChatResponse(
            text='{"patient_story": "too short"}', model=request.model, cost_usd=Decimal("0.002")
        )


def entry_of(benchmark_set, index=0) -> BenchmarkEntry:
    return benchmark_set.entries.get(index=index)


def test_set_creation_samples_the_same_seeds_as_the_sampler(distribution):
    first = make_set(distribution, size=6, seed=11)
    second = make_set(distribution, size=6, seed=11, name="Again")
    expected = sample_seeds(cases.distribution_spec(distribution), 6, 11)
    assert list(first.entries.values_list("seed", flat=True)) == expected
    assert list(second.entries.values_list("seed", flat=True)) == expected


def test_a_different_sampler_seed_gives_different_cases(distribution):
    first = make_set(distribution, size=6, seed=11)
    other = make_set(distribution, size=6, seed=12)
    assert list(first.entries.values_list("seed", flat=True)) != list(
        other.entries.values_list("seed", flat=True)
    )


def test_seed_attributes_are_copied_to_filterable_columns(distribution):
    entry = entry_of(make_set(distribution))
    assert entry.status == EntryStatus.PENDING
    assert (entry.condition, entry.personality, entry.gender_identity) == (
        entry.seed["condition"],
        entry.seed["personality"],
        entry.seed["gender_identity"],
    )


def test_it_refuses_an_empty_set(distribution):
    with pytest.raises(ValueError, match="Size"):
        make_set(distribution, size=0)


def test_enrichment_fills_the_entry_and_finishes_the_set(distribution):
    benchmark_set = enrich_all(make_set(distribution))
    entry = entry_of(benchmark_set)
    assert entry.status == EntryStatus.READY
    assert entry.profile["first_name"] and entry.story and entry.complexity
    assert entry.attempts == 1 and entry.failure_reason == ""
    assert entry.input_tokens > 0 and entry.output_tokens > 0
    assert entry.cost_usd == 0  # offline/* is priced at zero in prices.yaml
    assert benchmark_set.status == JobStatus.FINISHED


def test_enrichment_records_a_model_call_per_attempt_with_its_purpose(distribution):
    benchmark_set = make_set(distribution, size=1, model="offline/malformed-once")
    enrich_all(benchmark_set)
    entry = entry_of(benchmark_set)
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set)
    assert entry.status == EntryStatus.READY
    assert entry.attempts == 2  # the truncated answer, then the repaired one
    assert (
        list(calls.values_list("purpose", "model"))
        == [("enrichment", "offline/malformed-once")] * 2
    )
    assert sum(c.input_tokens for c in calls) == entry.input_tokens


def test_enriching_twice_does_nothing_the_second_time(distribution):
    benchmark_set = make_set(distribution, size=1)
    entry_id = cases.pending_entry_ids(benchmark_set)[0]
    cases.entry_enrich(entry_id)
    before = BenchmarkEntry.objects.get(pk=entry_id)
    cases.entry_enrich(entry_id)
    after = BenchmarkEntry.objects.get(pk=entry_id)
    assert ModelCall.objects.count() == 1
    assert (after.updated_at, after.profile) == (before.updated_at, before.profile)


def test_invalid_output_marks_the_entry_failed_with_the_reason(distribution, monkeypatch):
    model = NeverValid()
    use_router(monkeypatch, model)
    benchmark_set = enrich_all(make_set(distribution, size=1))
    entry = entry_of(benchmark_set)
    assert entry.status == EntryStatus.FAILED
    assert "patient_profile" in entry.failure_reason
    assert model.calls == entry.attempts == 3  # first answer and two repairs
    assert len(entry.raw_responses) == 3
    # Never half-saved: a failed entry keeps no profile, story or complexity.
    assert (entry.profile, entry.story, entry.complexity) == (None, "", "")
    assert ModelCall.objects.filter(benchmark_set=benchmark_set).count() == 3
    assert benchmark_set.status == JobStatus.FAILED  # its only case failed


def test_a_provider_error_marks_the_entry_failed_and_names_the_kind(distribution, monkeypatch):
    use_router(monkeypatch, provider_down("enrichment"))
    entry = entry_of(enrich_all(make_set(distribution, size=1)))
    assert entry.status == EntryStatus.FAILED
    assert "server" in entry.failure_reason and "503" in entry.failure_reason
    assert entry.profile is None


def test_an_unexpected_error_fails_the_entry_instead_of_leaving_it_pending(
    distribution, monkeypatch
):
    use_router(monkeypatch, FakeRouter(fail={"enrichment": KeyError("choices")}))
    benchmark_set = enrich_all(make_set(distribution, size=1))
    entry = entry_of(benchmark_set)
    assert entry.status == EntryStatus.FAILED
    # A bug of ours: people read a plain sentence, the traceback is in the log.
    assert entry.failure_reason == UNEXPECTED_FAILURE
    assert benchmark_set.status == JobStatus.FAILED


def test_a_set_whose_every_case_failed_fails_with_the_commonest_reason(distribution, monkeypatch):
    use_router(monkeypatch, provider_down("enrichment"))
    benchmark_set = enrich_all(make_set(distribution, size=3))

    assert benchmark_set.status == JobStatus.FAILED
    reason = entry_of(benchmark_set).failure_reason
    assert benchmark_set.error == f"All 3 cases failed; commonest reason: {reason}"


def test_a_set_with_one_case_ready_finishes(distribution, monkeypatch):
    benchmark_set = make_set(distribution, size=2)
    offline = cases.model_router
    use_router(monkeypatch, provider_down("enrichment"))
    cases.entry_enrich(entry_of(benchmark_set, 1).pk)
    monkeypatch.setattr(cases, "model_router", offline)
    benchmark_set = enrich_all(benchmark_set)

    assert [e.status for e in benchmark_set.entries.order_by("index")] == ["ready", "failed"]
    assert (benchmark_set.status, benchmark_set.error) == (JobStatus.FINISHED, "")


def test_retrying_failed_entries_puts_them_back_to_pending(distribution, monkeypatch):
    use_router(monkeypatch, provider_down("enrichment"))
    benchmark_set = enrich_all(make_set(distribution, size=2))
    assert cases.benchmark_set_retry_failed(benchmark_set) == 2
    benchmark_set.refresh_from_db()
    assert (benchmark_set.status, benchmark_set.error) == (JobStatus.RUNNING, "")
    assert set(benchmark_set.entries.values_list("status", "failure_reason")) == {
        (EntryStatus.PENDING, "")
    }


def test_an_unknown_price_stays_unknown_and_is_never_counted_as_zero(distribution, monkeypatch):
    use_router(monkeypatch, FakeRouter(price=None))
    benchmark_set = enrich_all(make_set(distribution, size=2))
    entry = entry_of(benchmark_set)
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set)
    assert entry.status == EntryStatus.READY
    assert entry.cost_usd is None
    assert accounting.total_cost(calls) is None
    assert [row["cost"] for row in accounting.cost_by_purpose(calls)] == [None]
    assert benchmark_set.progress()["unknown_cost"] == 2


def test_known_prices_add_up(distribution, monkeypatch):
    use_router(monkeypatch, FakeRouter(price=Decimal("0.25")))
    benchmark_set = enrich_all(make_set(distribution, size=2))
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set)
    assert accounting.total_cost(calls) == Decimal("0.5")
    assert accounting.cost_by_purpose(calls)[0]["cost"] == Decimal("0.5")


def sent_by_dispatch(benchmark_set, django_capture_on_commit_callbacks) -> list:
    sent = []
    with django_capture_on_commit_callbacks(execute=True):
        cases.enrichment_dispatch(benchmark_set, sent.extend)
    return sent


def test_dispatch_keeps_a_window_in_flight_and_resends_work_whose_lease_ran_out(
    distribution, monkeypatch, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from benchmark.models import BenchmarkEntry

    monkeypatch.setattr(cases, "ENRICHMENT_WINDOW", 2)
    benchmark_set = make_set(distribution, size=3)
    first = sent_by_dispatch(benchmark_set, django_capture_on_commit_callbacks)
    assert len(first) == 2
    assert sent_by_dispatch(benchmark_set, django_capture_on_commit_callbacks) == []

    # The worker holding the first entry died: its lease runs out and it is sent again.
    lost_id, lost_token = first[0]
    BenchmarkEntry.objects.filter(pk=lost_id).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    again = sent_by_dispatch(benchmark_set, django_capture_on_commit_callbacks)
    assert [entry_id for entry_id, _ in again] == [lost_id]
    assert again[0][1] != lost_token

    cases.entry_enrich(lost_id, lost_token)  # the lost message, arriving late: refused
    assert BenchmarkEntry.objects.get(pk=lost_id).status == EntryStatus.PENDING
    cases.entry_enrich(lost_id, again[0][1])
    assert BenchmarkEntry.objects.get(pk=lost_id).status == EntryStatus.READY


def test_a_duplicate_delivery_of_an_enrichment_task_does_nothing(
    distribution, django_capture_on_commit_callbacks
):
    benchmark_set = make_set(distribution, size=1)
    [(entry_id, token)] = sent_by_dispatch(benchmark_set, django_capture_on_commit_callbacks)
    cases.entry_enrich(entry_id, token)
    entry = benchmark_set.entries.get()
    cases.entry_enrich(entry_id, token)
    assert benchmark_set.entries.get().attempts == entry.attempts == 1


def test_a_failed_entry_with_unpriced_calls_makes_the_set_cost_unknown(distribution):
    from benchmark.models import BenchmarkEntry, EntryStatus

    benchmark_set = make_set(distribution)
    BenchmarkEntry.objects.filter(pk=benchmark_set.entries.first().pk).update(
        status=EntryStatus.FAILED, cost_usd=None
    )
    assert benchmark_set.progress()["unknown_cost"] == 1


# --- infeasible cases by design --------------------------------------------------------------


def sampler_seed_with_an_infeasible_case(distribution, size: int) -> int:
    spec = cases.distribution_spec(distribution)
    return next(
        seed
        for seed in range(1_000)
        if any(drawn["broken_rule"] for drawn in sample_seeds(spec, size, seed))
    )


@pytest.fixture
def mixed_set(distribution):
    """A small set holding at least one case that breaks an eligibility rule on purpose."""
    seed = sampler_seed_with_an_infeasible_case(distribution, 8)
    return make_set(distribution, size=8, seed=seed)


def test_the_broken_rule_is_copied_to_an_indexed_infeasible_flag(mixed_set):
    for entry in mixed_set.entries.all():
        broken = entry.seed["broken_rule"]
        assert entry.infeasible is bool(broken)
        assert entry.broken_rule == (broken["text"] if broken else "")
    assert BenchmarkEntry._meta.get_field("infeasible").db_index


def test_feasible_and_infeasible_querysets_split_a_set(mixed_set):
    feasible = set(mixed_set.entries.feasible().values_list("index", flat=True))
    infeasible = set(BenchmarkEntry.objects.infeasible().values_list("index", flat=True))
    assert infeasible and feasible
    assert feasible | infeasible == set(range(8)) and not feasible & infeasible
    assert all(not entry.seed["broken_rule"] for entry in mixed_set.entries.feasible())


def test_infeasible_cases_are_labelled_from_their_rule_and_the_rest_never_are(mixed_set):
    enrich_all(mixed_set)
    assert set(mixed_set.entries.values_list("status", flat=True)) == {EntryStatus.READY}
    for entry in mixed_set.entries.all():
        assert (entry.complexity == "infeasible") is entry.infeasible
        assert (entry.profile["sex"], entry.profile["age"]) == (
            entry.seed["sex"],
            entry.seed["age"],
        )


def test_entries_sampled_before_eligibility_rules_count_as_feasible(distribution):
    benchmark_set = make_set(distribution, size=1)
    old_seed = {k: v for k, v in entry_of(benchmark_set).seed.items() if k != "broken_rule"}
    entry = BenchmarkEntry.from_seed(benchmark_set, {**old_seed, "index": 1})
    assert (entry.infeasible, entry.broken_rule) == (False, "")
