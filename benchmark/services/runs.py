"""Benchmark runs: launch, dispatch with bounded concurrency, pause, cancel, resume, progress.

The unit of work is a Conversation row (run, case, agent, repetition). Its seed is hashed from
(run seed, set, case, repetition) without the agent, so every agent meets the same sandbox and
roster for a case: comparisons between agents are paired. Dispatch claims pending rows with a
conditional UPDATE, so two dispatchers never enqueue the same row twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from audit.services import audit_record
from benchmark.engine.agents.prompts import default_patient_prompt
from benchmark.engine.seeds import derive_seed
from benchmark.models import (
    AgentConfig,
    BenchmarkSet,
    Conversation,
    ConversationStatus,
    EntryStatus,
    Run,
    RunAgent,
    Termination,
    TraceEvent,
)
from benchmark.services import provenance
from jobs.models import JobStatus
from jobs.services import accounting
from jobs.services.cost_limits import (
    CostLimitError,
    cost_limit_for_resume,
    cost_limit_reached,
    cost_limit_refusal,
)
from jobs.services.finish import job_finish
from jobs.services.leases import lease
from jobs.services.processes import (
    ProcessIdentity,
    holder_fields,
    process_gone,
    this_host,
)
from jobs.services.retries import retry_summary
from llm.engine.chat import ProviderError
from llm.engine.generation import model_label, settings_of
from llm.engine.providers.model_strings import check_model_string

logger = logging.getLogger(__name__)

IN_FLIGHT = (ConversationStatus.QUEUED, ConversationStatus.RUNNING)
# A conversation's holder, in ProcessIdentity's order.
HOLDER_COLUMNS = ("holder_host", "holder_pid", "holder_started_at", "holder_start_ticks")
RETRYABLE_TERMINATIONS = (Termination.PROVIDER_ERROR, Termination.INFRASTRUCTURE)
# The calls a run's conversations make, as the accounting names them (their `purpose`).
ROSTER, PATIENT, ASSISTANT = "roster", "patient", "assistant"
RUN_PURPOSES = (ROSTER, PATIENT, ASSISTANT)


class RunError(ValueError):
    """A run cannot be launched or resumed as asked; the message says why."""


@dataclass(frozen=True)
class AgentChoice:
    model: str
    agent_config: AgentConfig

    @property
    def label(self) -> str:
        return f"{model_label(self.model)} · {self.agent_config.slug}"


def patient_prompt_version() -> str:
    return default_patient_prompt().content_hash[:16]


def run_config(
    *,
    benchmark_set: BenchmarkSet,
    agents: Iterable[AgentChoice],
    patient_model: str,
    roster_model: str,
    repetitions: int,
    max_turns: int,
    seed: int,
    clock: str,
) -> dict:
    """Everything that changes what a run produces. Its hash guards resumes."""
    agents = list(agents)
    return {
        "benchmark_set": benchmark_set.pk,
        "distribution": benchmark_set.distribution.fingerprint,
        "agents": [
            {
                "model": a.model,
                "agent": a.agent_config.slug,
                "agent_fingerprint": a.agent_config.fingerprint,
            }
            for a in agents
        ],
        "patient_model": patient_model,
        "patient_prompt_version": patient_prompt_version(),
        "roster_model": roster_model,
        "repetitions": repetitions,
        "max_turns": max_turns,
        "seed": seed,
        "clock": clock,
    } | generation_manifest([*(a.model for a in agents), patient_model, roster_model])


def generation_manifest(models: Iterable[str]) -> dict:
    """The generation settings each model runs with (its own over its family's defaults), for
    the models that have any; no key at all when none has, so older runs keep their hash."""
    settings = {model: settings_of(model).given() for model in dict.fromkeys(models)}
    settings = {model: given for model, given in settings.items() if given}
    return {"generation": settings} if settings else {}


def config_hash(config: dict) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@transaction.atomic
def run_launch(
    *,
    name: str,
    benchmark_set: BenchmarkSet,
    agents: list[AgentChoice],
    patient_model: str,
    roster_model: str | None = None,
    repetitions: int = 1,
    concurrency: int = 8,
    use_cache: bool = True,
    cost_limit_usd: Decimal | None = None,
    max_turns: int = 15,
    seed: int = 0,
    clock: datetime | None = None,
    user=None,
) -> Run:
    """Create the run and its conversations (pending). `clock` is the sandboxes' "now"
    (default: the launch time); a run repeated to reproduce another passes that run's clock,
    since the slots and dates every conversation sees depend on it."""
    if not agents:
        raise RunError("Choose at least one agent (model + configuration).")
    if benchmark_set.imported:
        raise RunError(
            f"{benchmark_set.name!r} was imported ({benchmark_set.imported_from}): its cases "
            "have no patient record or sandbox to play a conversation in."
        )
    if len({a.label for a in agents}) != len(agents):
        raise RunError("The same model and configuration were chosen twice.")
    roster_model = roster_model or patient_model
    _check_models(agents, patient_model, roster_model)
    refusal = cost_limit_refusal(
        models=[*(a.model for a in agents), patient_model, roster_model],
        cost_limit_usd=cost_limit_usd,
    )
    if refusal:
        raise RunError(refusal)
    entries = list(benchmark_set.entries.filter(status=EntryStatus.READY))
    if not entries:
        raise RunError(f"Benchmark set {benchmark_set.name!r} has no ready entries yet.")
    clock = (clock or timezone.now()).replace(microsecond=0)
    config = run_config(
        benchmark_set=benchmark_set,
        agents=agents,
        patient_model=patient_model,
        roster_model=roster_model,
        repetitions=repetitions,
        max_turns=max_turns,
        seed=seed,
        clock=clock.isoformat(),
    )
    run = Run(
        name=name,
        benchmark_set=benchmark_set,
        patient_model=patient_model,
        patient_prompt_version=config["patient_prompt_version"],
        roster_model=config["roster_model"],
        repetitions=repetitions,
        concurrency=concurrency,
        use_cache=use_cache,
        cost_limit_usd=cost_limit_usd,
        max_turns=max_turns,
        seed=seed,
        config=config,
        config_hash=config_hash(config),
        inputs=provenance.launch_inputs(),
        status=JobStatus.RUNNING,
        created_by=user,
        started_at=timezone.now(),
    )
    run.full_clean()
    run.save()
    run_agents = [
        RunAgent.objects.create(run=run, model=a.model, agent_config=a.agent_config, label=a.label)
        for a in agents
    ]
    # Created case by case, which is the order run_dispatch plays them in (by primary key).
    Conversation.objects.bulk_create(
        Conversation(
            run=run,
            run_agent=agent,
            entry=entry,
            repetition=rep,
            clock=clock,
            seed=derive_seed(seed, benchmark_set.pk, entry.index, rep),
        )
        for entry in entries
        for agent in run_agents
        for rep in range(repetitions)
    )
    audit_record(actor=user, action="run.launched", target=run, after={"config": config})
    return run


def _check_models(agents: list[AgentChoice], patient_model: str, roster_model: str) -> None:
    """Refuse an unknown provider or offline behaviour before anything is created, whichever
    door (form, CLI, demo) the run comes through."""
    roles = [(choice.model, "assistant") for choice in agents]
    roles += [(patient_model, "patient"), (roster_model, "roster")]
    for model, purpose in roles:
        try:
            check_model_string(model, purpose=purpose)
        except ProviderError as error:
            raise RunError(str(error)) from error


def run_check_config(run: Run, config: dict) -> None:
    """Refuse to resume a run with a different configuration; name what changed."""
    if config_hash(config) == run.config_hash:
        return
    changed = sorted(k for k in set(config) | set(run.config) if config.get(k) != run.config.get(k))
    raise RunError(
        f"Run {run.name!r} was launched with a different configuration "
        f"(changed: {', '.join(changed)}). Launch a new run instead of resuming this one."
    )


def running_run_ids() -> list[int]:
    return list(Run.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


def run_dispatch(
    run: Run, enqueue: Callable[[list[int]], None], *, holder: ProcessIdentity | None = None
) -> list[int]:
    """Top the run up to its concurrency; recover lost work; finish or stop it when due.

    `holder` is the process that will play what is claimed (an inline command); None sends
    it to the task queue, where no process holds it until a worker starts it."""
    with transaction.atomic():
        # Every finished conversation triggers a dispatch: lock the run row so concurrent
        # dispatchers take turns and together never exceed the concurrency.
        run.refresh_from_db(from_queryset=Run.objects.select_for_update())
        return _dispatch_locked(run, enqueue, holder)


def run_dispatch_after(conversation_id: int, enqueue: Callable[[list[int]], None]) -> list[int]:
    """`run_dispatch` of the run of a conversation that just ended (its task's last step):
    the run is found and locked in one statement."""
    of_conversation = Conversation.objects.filter(pk=conversation_id).values("run_id")
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk__in=of_conversation).order_by().first()
        return [] if run is None else _dispatch_locked(run, enqueue, None)


def _dispatch_locked(
    run: Run, enqueue: Callable[[list[int]], None], holder: ProcessIdentity | None
) -> list[int]:
    if run.status != JobStatus.RUNNING:
        return []
    in_flight = _in_flight_recovered(run)
    room = max(run.concurrency - in_flight, 0)
    # At least one even without room: whether any is left decides whether the run is done.
    pending = _pending_ids(run, max(room, 1))
    if in_flight == 0 and not pending:
        job_finish(run)
        return []
    # The limit only stops new work: a run whose last conversation crossed it still finishes.
    if not pending or _over_cost_limit(run):
        return []
    claimed = _claim(pending[:room], holder)
    if claimed:
        transaction.on_commit(lambda: enqueue(claimed))
    return claimed


def _pending_ids(run: Run, count: int) -> list[int]:
    # Case by case (every agent of a case, then the next case): run_launch creates the
    # conversations in that order, so it is the primary key's, which the (run, status, id)
    # index reads without a sort or a finished row.
    pending = run.conversations.filter(status=ConversationStatus.PENDING).order_by("pk")
    return list(pending.values_list("id", flat=True)[:count])


def _claim(candidates: list[int], holder: ProcessIdentity | None) -> list[int]:
    claimed = []
    for conversation_id in candidates:
        won = Conversation.objects.filter(
            pk=conversation_id, status=ConversationStatus.PENDING
        ).update(
            status=ConversationStatus.QUEUED, heartbeat_at=timezone.now(), **holder_fields(holder)
        )
        if won:
            claimed.append(conversation_id)
    return claimed


def run_unclaim(conversation_ids: list[int]) -> None:
    """Put claimed conversations whose messages could not be sent back to pending."""
    Conversation.objects.filter(pk__in=conversation_ids, status=ConversationStatus.QUEUED).update(
        status=ConversationStatus.PENDING, **holder_fields(None)
    )


def _in_flight_recovered(run: Run) -> int:
    """How many of the run's conversations are queued or running, once the lost ones are back
    to pending: work whose holder stopped on this host (at once), and work whose heartbeat is
    older than a lease (whoever held it, on whichever host). Every finished conversation asks
    this, so it is one read of the in-flight rows (about the run's concurrency); it writes
    only when some work was lost."""
    rows = run.conversations.filter(status__in=IN_FLIGHT).order_by()
    seen = list(rows.values_list(*HOLDER_COLUMNS, "heartbeat_at"))
    stale_before = timezone.now() - lease()
    here = {ProcessIdentity(*holder) for *holder, _ in seen if _held_here(*holder)}
    reclaimed = _reclaim_gone(run, sorted(here, key=lambda identity: identity.pid))
    if any(beat is not None and beat < stale_before for *_, beat in seen):
        rows.filter(heartbeat_at__lt=stale_before).update(
            status=ConversationStatus.PENDING, **holder_fields(None)
        )
    elif not reclaimed:
        return len(seen)
    return rows.count()


def _held_here(host: str, pid: int | None, *_) -> bool:
    return host == this_host() and pid is not None


@dataclass(frozen=True)
class Reclaimed:
    holder: ProcessIdentity
    count: int


def run_reclaim_abandoned(run: Run) -> list[Reclaimed]:
    """Put back to pending the conversations held by processes of this host that no longer
    run (a killed worker or inline command), without waiting for their lease."""
    held_here = (
        run.conversations.filter(status__in=IN_FLIGHT, holder_host=this_host())
        .exclude(holder_pid=None)
        .order_by()  # the default ordering would join entries and agents into the DISTINCT
        .values_list(*HOLDER_COLUMNS)
        .distinct()
    )
    return _reclaim_gone(run, [ProcessIdentity(*holder) for holder in held_here])


def _reclaim_gone(run: Run, holders: Iterable[ProcessIdentity]) -> list[Reclaimed]:
    """Back to pending: the conversations of the holders (processes of this host) that no
    longer run."""
    reclaimed = []
    for holder in holders:
        if not process_gone(holder):
            continue
        # Matching the holder again: the row may have been taken up since it was read.
        count = run.conversations.filter(status__in=IN_FLIGHT, **holder_fields(holder)).update(
            status=ConversationStatus.PENDING, **holder_fields(None)
        )
        if count:
            logger.warning(
                "run %s: reclaimed %d conversations left by stopped process %s",
                run.pk,
                count,
                holder.describe(),
            )
            reclaimed.append(Reclaimed(holder, count))
    return reclaimed


@dataclass(frozen=True)
class HeldWork:
    """In-flight conversations another process (or the task queue) holds."""

    count: int
    until: datetime  # when the last of their leases runs out unless their heartbeat goes on
    holders: list[ProcessIdentity]  # the processes holding them (none: queued for workers)
    queued_for_workers: int


def run_held_elsewhere(run: Run, *, me: ProcessIdentity) -> HeldWork | None:
    """What of the run is in flight but not held by `me`, or None."""
    rows = list(
        run.conversations.filter(status__in=IN_FLIGHT)
        .exclude(**holder_fields(me))
        .values_list(*HOLDER_COLUMNS, "heartbeat_at")
    )
    if not rows:
        return None
    holders = sorted(
        {ProcessIdentity(h, p, s, t) for h, p, s, t, _ in rows if h and p is not None},
        key=lambda identity: (identity.host, identity.pid),
    )
    beats = [beat for *_, beat in rows if beat is not None]
    until = (max(beats) if beats else timezone.now()) + lease()
    return HeldWork(
        count=len(rows),
        until=until,
        holders=holders,
        queued_for_workers=sum(1 for h, *_ in rows if not h),
    )


def _over_cost_limit(run: Run) -> bool:
    if not cost_limit_reached(run, spent=lambda: run_spent(run)):
        return False
    _requeue(run)
    return True


def run_spent(run: Run) -> Decimal:
    """What the run's own conversations spent: judges and the rubric lab, which account their
    calls to the run too, have cost limits of their own."""
    return accounting.known_cost(run.model_calls.filter(purpose__in=RUN_PURPOSES))


def run_models(run: Run) -> list[str]:
    """Every model the run calls: agents, patient simulator and roster writer."""
    return [*run.agents.values_list("model", flat=True), run.patient_model, run.roster_model]


def run_pause(run: Run, *, actor=None) -> None:
    """Stop launching work; conversations already running finish, queued ones wait."""
    before = run.status
    _pause(run, "Paused by a person.")
    _audit(run, "run.paused", before, actor)


def _audit(run: Run, action: str, status_before: str, actor) -> None:
    run.refresh_from_db(fields=["status"])
    audit_record(
        actor=actor,
        action=action,
        target=run,
        before={"status": status_before},
        after={"status": run.status},
    )


def _pause(run: Run, reason: str) -> None:
    with transaction.atomic():
        Run.objects.filter(pk=run.pk, status=JobStatus.RUNNING).update(
            status=JobStatus.PAUSED, stop_reason=reason
        )
        _requeue(run)


def _requeue(run: Run) -> None:
    # Queued tasks will find the run paused and do nothing: their rows go back to pending, so
    # they neither sit "in flight" nor block the concurrency after a resume.
    run.conversations.filter(status=ConversationStatus.QUEUED).update(
        status=ConversationStatus.PENDING, **holder_fields(None)
    )


def run_cancel(run: Run, *, actor=None) -> None:
    before = run.status
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).exclude(status=JobStatus.FINISHED).update(
            status=JobStatus.CANCELLED,
            stop_reason="Cancelled by a person.",
            finished_at=timezone.now(),
        )
        run.conversations.filter(
            status__in=(ConversationStatus.PENDING, ConversationStatus.QUEUED)
        ).update(status=ConversationStatus.CANCELLED, termination_reason=Termination.CANCELLED)
    _audit(run, "run.cancelled", before, actor)


def run_resume(
    run: Run,
    *,
    retry_failed: bool = False,
    cost_limit_usd: Decimal | None = None,
    actor=None,
) -> None:
    """Continue a paused, cancelled or finished run; optionally retry infrastructure failures."""
    if run.patient_prompt_version != patient_prompt_version():
        raise RunError(
            "The patient prompt changed since this run was launched; resuming would mix "
            "prompt versions. Launch a new run."
        )
    try:
        limit = cost_limit_for_resume(
            run, spent=run_spent(run), models=run_models(run), cost_limit_usd=cost_limit_usd
        )
    except CostLimitError as error:
        raise RunError(str(error)) from None
    before = run.status
    with transaction.atomic():
        run.cost_limit_usd = limit
        run.status, run.stop_reason, run.finished_at = JobStatus.RUNNING, "", None
        run.save(update_fields=["status", "stop_reason", "finished_at", "cost_limit_usd"])
        retry = Q(status=ConversationStatus.CANCELLED)
        if retry_failed:
            retry |= Q(
                status=ConversationStatus.FAILED, termination_reason__in=RETRYABLE_TERMINATIONS
            )
        run.conversations.filter(retry).update(
            status=ConversationStatus.PENDING, termination_reason="", error=""
        )
    _audit(run, "run.resumed", before, actor)


def run_progress(run: Run) -> dict:
    counts = dict(
        run.conversations.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    summary = _status_summary(counts)
    total = summary["total"]
    done = summary["finished"] + summary["failed"] + summary["cancelled"]
    in_flight = sum(counts.get(status, 0) for status in IN_FLIGHT)
    tokens = run.model_calls.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    spent = accounting.cost_summary(run.model_calls.all())
    return {
        **summary,
        "input_tokens": tokens["i"] or 0,
        "output_tokens": tokens["o"] or 0,
        "cost": spent["cost"],
        "calls": spent["calls"],
        "cached_calls": spent["cached"],
        "terminations": dict(
            run.conversations.exclude(termination_reason="")
            .values_list("termination_reason")
            .annotate(n=Count("id"))
            .values_list("termination_reason", "n")
        ),
        "eta_seconds": _eta_seconds(run, done, total),
        # When a conversation in flight last said it is alive (its worker's heartbeat).
        "last_heartbeat": run.conversations.filter(status=ConversationStatus.RUNNING).aggregate(
            last=Max("heartbeat_at")
        )["last"],
        "retries": retry_summary(run.conversations.all()),
        # A paused or cancelled run still has conversations finishing: keep the page live.
        "live": run.status == JobStatus.RUNNING or in_flight > 0,
        "per_agent": conversation_averages(run),
    }


def runs_counts(runs: Iterable[Run]) -> dict[int, dict]:
    """Each run's conversations by status (run_progress's counts), in one query for them all:
    what a list shows per row."""
    by_run: dict[int, dict] = {run.pk: {} for run in runs}
    rows = (
        Conversation.objects.filter(run__in=list(by_run))
        .values_list("run_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for run_id, status, n in rows:
        by_run[run_id][status] = n
    return {pk: _status_summary(counts) for pk, counts in by_run.items()}


def _status_summary(counts: dict[str, int]) -> dict:
    total = sum(counts.values())
    finished = counts.get(ConversationStatus.FINISHED, 0)
    failed = counts.get(ConversationStatus.FAILED, 0)
    cancelled = counts.get(ConversationStatus.CANCELLED, 0)
    done = finished + failed + cancelled
    return {
        "total": total,
        "finished": finished,
        "failed": failed,
        "cancelled": cancelled,
        "running": counts.get(ConversationStatus.RUNNING, 0),
        "queued": counts.get(ConversationStatus.QUEUED, 0),
        "pending": counts.get(ConversationStatus.PENDING, 0),
        "percent": round(100 * done / total, 1) if total else 100.0,
    }


def conversation_averages(run: Run) -> list[dict]:
    """Per agent, then for all agents: finished conversations and the mean assistant turns
    and tool calls per finished conversation (None until one finishes)."""
    finished = run.conversations.filter(status=ConversationStatus.FINISHED)
    turns = {
        row["run_agent_id"]: (row["n"], row["turns"])
        for row in finished.values("run_agent_id").annotate(
            n=Count("id"), turns=Sum("assistant_turns")
        )
    }
    tool_calls = dict(
        TraceEvent.objects.filter(
            conversation__run=run,
            conversation__status=ConversationStatus.FINISHED,
            kind="tool_call",
        )
        .values("conversation__run_agent_id")
        .annotate(n=Count("id"))
        .values_list("conversation__run_agent_id", "n")
    )
    rows = [
        _averages(agent.label, *turns.get(agent.pk, (0, 0)), tool_calls.get(agent.pk, 0))
        for agent in run.agents.all()
    ]
    if len(rows) > 1:
        finished_count = sum(n for n, _ in turns.values())
        turn_count = sum(t for _, t in turns.values())
        rows.append(_averages("All agents", finished_count, turn_count, sum(tool_calls.values())))
    return rows


def _averages(label: str, finished: int, turns: int, tool_calls: int) -> dict:
    return {
        "label": label,
        "finished": finished,
        "turns": turns / finished if finished else None,
        "tool_calls": tool_calls / finished if finished else None,
    }


def _eta_seconds(run: Run, done: int, total: int) -> float | None:
    if run.status != JobStatus.RUNNING or not done or done >= total or not run.started_at:
        return None
    elapsed = (timezone.now() - run.started_at).total_seconds()
    return elapsed / done * (total - done)
