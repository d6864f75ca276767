"""Token and cost accounting: every model response becomes an accounting row (a concrete
ModelCallRecord such as benchmark.models.ModelCall).

An unknown price stays unknown: sums report it as None (shown as "unknown"), never as 0.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from decimal import Decimal

from django.core.exceptions import ObjectDoesNotExist
from django.db import Error as DatabaseFailure
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from common.inserts import rows_insert
from jobs.models import ModelCallRecord
from jobs.services.retries import retry_fields
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError, Usage
from llm.engine.structured import forget_answer

logger = logging.getLogger(__name__)


class RecordingClient:
    """Wraps a chat client and remembers (purpose, response) for every call, thread-safely,
    and the provider retries of every call, answered or failed.

    With an `owner` (what makes the unsaved accounting row of a call, with what the call
    belongs to: `partial(ModelCall, run=..., conversation=...)`), every answer a model
    gave is written down as its row the moment it arrives, in a commit of its own,
    with `also` (the unit's own running sums, e.g. `spend_added`) in the same transaction; a
    unit without ModelCall rows gives `also` alone. A worker killed before its unit stores the
    outcome has still accounted for the money it spent, and the attempt sent again adds its
    own calls. An answer replayed from the cache (it cost nothing) or one the database could
    not take then is left to the unit's outcome: `unwritten`, saved by `unwritten_save`. Each
    row carries a key of its own, so none is ever written twice; a batch answer a replay reads
    back keeps the key it was paid under (ChatResponse.accounted_as), so its paid row stands
    for it.

    With `defer_last` (a unit that makes its calls one after the other on one thread, and
    stores its outcome right after the last), the newest answer waits: it is written before
    the next call goes out, or with the outcome, in the outcome's transaction. A judge call
    then costs one transaction instead of two; only the moment between an answer and its
    outcome, spent parsing it, separates a kill from the ledger, as before between an answer
    and its own write."""

    def __init__(
        self,
        inner,
        *,
        owner: RowMaker | None = None,
        also: Also | None = None,
        defer_last: bool = False,
    ):
        self.inner = inner
        self.owner = owner
        self.also = also
        self.defer_last = defer_last
        self._deferred: tuple[str, ChatResponse, str] | None = None
        self.calls: list[tuple[str, ChatResponse]] = []
        self.retries: Counter[str] = Counter()
        self._unwritten: list[tuple[str, ChatResponse, str]] = []
        self._lock = threading.Lock()
        # Made inside a transaction (a command's, a test's), the unit's rows are not committed:
        # a thread of its own connection would wait on them, or not see them. Answers that
        # arrive on other threads are then written with the outcome.
        self._creator = threading.get_ident()
        self._creator_in_transaction = connection.in_atomic_block

    def chat(self, request: ChatRequest) -> ChatResponse:
        self._deferred_write()
        try:
            response = self.inner.chat(request)
        except ProviderError as error:
            with self._lock:
                self.retries.update(error.retries)
            raise
        with self._lock:
            self.calls.append((request.purpose, response))
            self.retries.update(response.retries)
        if self.owner is None and self.also is None:
            return response
        call = (request.purpose, response, response.accounted_as or secrets.token_hex(16))
        if self.defer_last and not response.cached:
            self._deferred = call
            return response
        if response.cached or not self._writable_here() or not self._written(call):
            with self._lock:
                self._unwritten.append(call)
        return response

    def forget(self, request: ChatRequest) -> None:
        forget_answer(self.inner, request)

    @property
    def unwritten(self) -> list[tuple[str, ChatResponse, str]]:
        """(purpose, response, key) of the calls not yet written down (the deferred one too)."""
        with self._lock:
            return [*self._unwritten, *([self._deferred] if self._deferred else [])]

    def _deferred_write(self) -> None:
        call, self._deferred = self._deferred, None
        if call is not None and (not self._writable_here() or not self._written(call)):
            with self._lock:
                self._unwritten.append(call)

    def _writable_here(self) -> bool:
        return not self._creator_in_transaction or threading.get_ident() == self._creator

    def _written(self, call: tuple[str, ChatResponse, str]) -> bool:
        try:
            if self.also is None and not connection.in_atomic_block:
                # One INSERT commits on its own: a transaction around it only added a BEGIN
                # and a COMMIT to every agent and patient call (issue 34).
                rows_insert([_model_call_row(*call, self.owner)])
            else:
                with transaction.atomic():
                    if self.owner is not None:
                        rows_insert([_model_call_row(*call, self.owner)])
                    if self.also is not None:
                        self.also([call[1]])
        except (DatabaseFailure, ObjectDoesNotExist) as error:  # written with the outcome
            logger.warning("a %s answer is accounted later: %s", call[0], error)
            return False
        finally:
            if threading.get_ident() != self._creator:
                # A helper thread of the unit (the rubric pipeline's two tracks, an instance
                # score's criteria) ends with it, and Django leaves a thread's connection to
                # the garbage collector: dozens stayed open at once, past PostgreSQL's limit.
                connection.close()
        return True


# A unit's running sums, added to in the transaction that writes a call's accounting row.
Also = Callable[[list[ChatResponse]], None]
# Makes the unsaved accounting row of one call from its fields (ModelCallRecord's).
RowMaker = Callable[..., ModelCallRecord]


def unwritten_save(recorder: RecordingClient) -> None:
    """Write the calls `recorder` has not written yet (inside the unit's own transaction)."""
    rows = unwritten_rows(recorder)
    if rows:
        type(rows[0]).objects.bulk_create(rows, ignore_conflicts=True)


def unwritten_rows(recorder: RecordingClient) -> list[ModelCallRecord]:
    if recorder.owner is None:
        return []
    return [_model_call_row(*call, recorder.owner) for call in recorder.unwritten]


def answer_record(owner: RowMaker, purpose: str, response: ChatResponse, key: str) -> bool:
    """Write one answer's accounting row under `key` unless a row has it already; returns
    whether it was new. For answers that arrive outside a RecordingClient (a batch's results,
    read again by a poller after a crash): call it inside the transaction that records the
    answer's outcome, so both happen once or not at all."""
    row = _model_call_row(purpose, response, key, owner)
    if type(row).objects.filter(answer_key=key).exists():
        return False
    row.save()
    return True


def answers_record(rows: list[ModelCallRecord]) -> set[str]:
    """Write answers' accounting rows (new rows of one model, each under its `answer_key`)
    in two statements, but those a row has already; returns the keys written. As with
    `answer_record`: inside the transaction that records the answers' outcomes."""
    if not rows:
        return set()
    model = type(rows[0])
    keys = [row.answer_key for row in rows]
    known = set(model.objects.filter(answer_key__in=keys).values_list("answer_key", flat=True))
    new: dict[str, ModelCallRecord] = {}
    for row in rows:
        if row.answer_key not in known:
            new.setdefault(row.answer_key, row)  # one answer twice in a chunk is paid once
    rows_insert(list(new.values()))
    return set(new)


def answer_row(owner: RowMaker, purpose: str, response: ChatResponse, key: str) -> ModelCallRecord:
    """One answer's accounting row under `key`, not saved (see `answers_record`)."""
    return _model_call_row(purpose, response, key, owner)


def _model_call_row(
    purpose: str, response: ChatResponse, key: str, owner: RowMaker
) -> ModelCallRecord:
    return owner(
        purpose=purpose,
        model=response.model,
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        cached_input_tokens=response.usage.cached_input_tokens,
        cache_write_tokens=response.usage.cache_write_tokens,
        cost_usd=response.cost_usd,
        list_cost_usd=response.list_cost_usd,
        cached=response.cached,
        latency_ms=response.latency_ms,
        answer_key=key,
        seed=response.seed,
        fingerprint=response.fingerprint[:100],
        **retry_fields(response.retries),
    )


# The running spend of a unit that sums its own (the rubric lab's units).
SPEND = ("input_tokens", "output_tokens", "cost_usd", "cost_known", "model_costs")


def spend_added(model, pk: int, calls: list[tuple[str, ChatResponse]]) -> None:
    """Add answered calls to row `pk`'s running spend (its SPEND columns), over every attempt:
    called as each answer arrives (RecordingClient's `also`) and with the outcome for the
    calls not written then. The row is locked for the read and the write."""
    if not calls:
        return
    with transaction.atomic():
        row = model.objects.select_for_update().only("pk", *SPEND).get(pk=pk)
        sums = totals(response for _, response in calls)
        first = not row.model_costs
        known = (first or row.cost_known) and sums["cost_usd"] is not None
        model.objects.filter(pk=pk).update(
            input_tokens=row.input_tokens + sums["input_tokens"],
            output_tokens=row.output_tokens + sums["output_tokens"],
            cost_usd=(row.cost_usd or Decimal(0)) + sums["cost_usd"] if known else None,
            cost_known=known,
            model_costs=model_costs_added(row.model_costs, calls),
        )


def price_added(model, pk: int, response: ChatResponse) -> None:
    """Add only the answer's price to row `pk`'s running spend (a batch answer in cache
    replay, jobs.services.replay_batches): its call and tokens are counted when the replay
    reads it back from the cache (a cached call, free), so they are never counted twice.
    Call it inside the transaction that records the answer."""
    row = model.objects.select_for_update().only("pk", *SPEND).get(pk=pk)
    known = (not row.model_costs or row.cost_known) and response.cost_usd is not None
    costs = model_costs_added(row.model_costs, [("", replace(response, usage=Usage()))])
    costs[response.model]["calls"] -= 1
    model.objects.filter(pk=pk).update(
        cost_usd=(row.cost_usd or Decimal(0)) + response.cost_usd if known else None,
        cost_known=known,
        model_costs=costs,
    )


def spend_ledger(model, pk: int) -> Also:
    """RecordingClient's `also` for a unit row that sums its own spend."""
    return lambda responses: spend_added(model, pk, [("", r) for r in responses])


def totals(responses: Iterable[ChatResponse]) -> dict:
    """Token and cost sums of some responses; cost is None when any price was unknown."""
    responses = list(responses)
    costs = [r.cost_usd for r in responses]
    list_costs = [r.cost_usd if r.list_cost_usd is None else r.list_cost_usd for r in responses]
    return {
        "input_tokens": sum(r.usage.input_tokens for r in responses),
        "output_tokens": sum(r.usage.output_tokens for r in responses),
        "cached_input_tokens": sum(r.usage.cached_input_tokens for r in responses),
        "cache_write_tokens": sum(r.usage.cache_write_tokens for r in responses),
        "cost_usd": None if any(c is None for c in costs) else sum(costs, Decimal(0)),
        "list_cost_usd": None
        if any(c is None for c in list_costs)
        else sum(list_costs, Decimal(0)),
    }


# A row kept before list costs were (null list_cost_usd) was billed with no caching discount:
# its cost is its list cost.
LIST_COST = Coalesce("list_cost_usd", "cost_usd")


def cost_by_purpose(calls: QuerySet[ModelCallRecord]) -> list[dict]:
    """Per purpose and model: calls, tokens (prompt-cache reads and writes among the input),
    how many calls had no price, and the list cost, the cost with prompt caching and what
    caching saved (all None when some call had no price)."""
    rows = (
        calls.values("purpose", "model")
        .annotate(
            calls=Count("id"),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cached_input_tokens=Sum("cached_input_tokens"),
            cache_write_tokens=Sum("cache_write_tokens"),
            cost=Sum("cost_usd"),
            list_cost=Sum(LIST_COST),
            unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
            cached=Count("id", filter=Q(cached=True)),
        )
        .order_by("purpose", "model")
    )
    return [_with_saving(row) for row in rows]


def caching_summary(calls: QuerySet[ModelCallRecord]) -> dict:
    """The list cost of some calls (every input token at the input price, no batch discount),
    what they cost (prompt caching and, for calls sent in a batch, the batch price) and the
    difference (None when some call had no price)."""
    row = calls.aggregate(
        cost=Sum("cost_usd"),
        list_cost=Sum(LIST_COST),
        cached_input_tokens=Sum("cached_input_tokens"),
        cache_write_tokens=Sum("cache_write_tokens"),
        unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
    )
    return _with_saving(
        {
            **row,
            "cost": row["cost"] or Decimal(0),
            "list_cost": row["list_cost"] or Decimal(0),
            "cached_input_tokens": row["cached_input_tokens"] or 0,
            "cache_write_tokens": row["cache_write_tokens"] or 0,
        }
    )


def _with_saving(row: dict) -> dict:
    if row["unpriced"]:
        return {**row, "cost": None, "list_cost": None, "saved": None}
    return {**row, "saved": row["list_cost"] - row["cost"]}


def seeds_by_purpose(calls: QuerySet[ModelCallRecord]) -> list[dict]:
    """Per purpose and model: the seeds sent and the fingerprints of the backends that answered
    (only calls that carried a seed). One conversation's role keeps one seed; two fingerprints
    mean the provider changed its backend between calls."""
    rows = (
        calls.exclude(seed=None)
        .values_list("purpose", "model", "seed", "fingerprint")
        .distinct()
        .order_by("purpose", "model", "seed", "fingerprint")
    )
    grouped: dict[tuple[str, str], dict] = {}
    for purpose, model, seed, fingerprint in rows:
        row = grouped.setdefault(
            (purpose, model), {"purpose": purpose, "model": model, "seeds": [], "fingerprints": []}
        )
        for name, value in (("seeds", seed), ("fingerprints", fingerprint)):
            if value not in row[name] and value != "":
                row[name].append(value)
    return list(grouped.values())


def total_cost(calls: QuerySet[ModelCallRecord]) -> Decimal | None:
    summary = calls.aggregate(cost=Sum("cost_usd"), unpriced=Count("id", filter=Q(cost_usd=None)))
    if summary["unpriced"]:
        return None
    return summary["cost"] or Decimal(0)


def cost_summary(calls: QuerySet[ModelCallRecord]) -> dict:
    """What a summary line shows: calls, how many the cache answered, and the cost (None when
    some call had no price)."""
    counts = calls.aggregate(calls=Count("id"), cached=Count("id", filter=Q(cached=True)))
    return {**counts, "cost": total_cost(calls)}


def known_cost(calls: QuerySet[ModelCallRecord]) -> Decimal:
    """Cost of the priced calls only: what a cost limit can compare against."""
    return calls.aggregate(cost=Sum("cost_usd"))["cost"] or Decimal(0)


def model_costs(calls: Iterable[tuple[str, ChatResponse]]) -> dict[str, dict]:
    """Per model called: calls, cached calls, tokens and cost (a string; None once a call of
    it had no price), JSON-ready: stored on units of work that keep no accounting rows."""
    summary: dict[str, dict] = {}
    for _, response in calls:
        row = summary.setdefault(response.model, _empty_cost_row())
        row["calls"] += 1
        row["cached"] += int(response.cached)
        row["input_tokens"] += response.usage.input_tokens
        row["output_tokens"] += response.usage.output_tokens
        row["cost"] = _added(row["cost"], response.cost_usd)
    return {
        model: {**row, "cost": None if row["cost"] is None else str(row["cost"])}
        for model, row in summary.items()
    }


def model_costs_added(stored: dict, calls: Iterable[tuple[str, ChatResponse]]) -> dict:
    """A stored per-model summary (`model_costs`) with more calls added, in the same form."""
    rows = model_cost_rows([stored, model_costs(calls)])
    return {
        row.pop("model"): {**row, "cost": None if row["cost"] is None else str(row["cost"])}
        for row in rows
    }


def model_cost_rows(summaries: Iterable[dict[str, dict]]) -> list[dict]:
    """Stored per-model summaries (`model_costs`) added up: one row per model, sorted, with
    calls, cached, input_tokens, output_tokens and cost (None when some call had no price)."""
    rows: dict[str, dict] = {}
    for summary in summaries:
        for model, stored in (summary or {}).items():
            row = rows.setdefault(model, _empty_cost_row())
            for field in ("calls", "cached", "input_tokens", "output_tokens"):
                row[field] += stored.get(field, 0)
            row["cost"] = _added(row["cost"], stored.get("cost"))
    return [{"model": model, **row} for model, row in sorted(rows.items())]


def _empty_cost_row() -> dict:
    return {"calls": 0, "cached": 0, "input_tokens": 0, "output_tokens": 0, "cost": Decimal(0)}


def _added(total: Decimal | None, amount) -> Decimal | None:
    # An unknown price makes the model's cost unknown, never a smaller known number.
    return None if total is None or amount is None else total + Decimal(amount)
