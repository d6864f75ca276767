"""Launch or resume a benchmark run from the CLI, with a progress bar."""

from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import pluralize
from django.utils import timezone

from benchmark.engine.manifest import ManifestError
from benchmark.models import BenchmarkSet, Run
from benchmark.services import agents as agent_services
from benchmark.services import forecasts, manifests, runs
from benchmark.services.inline import run_execute_inline
from jobs.models import JobStatus
from jobs.services import accounting
from jobs.services.cli import (
    add_price_argument,
    cost_text,
    price_options,
    progress_bar,
    wait_until,
)
from jobs.services.queue import held_work_message
from jobs.services.starts import job_start
from jobs.services.worker_heartbeats import stalled_message, worker_health
from llm.engine.forecast import text_table


class Command(BaseCommand):
    help = (
        "Launch a run (every --model x every --agent on a benchmark set), or resume the run "
        "with the same --name if its configuration is unchanged. With --replay MANIFEST, "
        "launch the configuration a run's manifest describes, once its data files still match."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", help="required unless --replay (default: '<run> (replay)')")
        parser.add_argument("--set", help="benchmark set id or name (required unless --replay)")
        parser.add_argument(
            "--model",
            action="append",
            dest="models",
            help="model under test; repeat for several (required unless --replay)",
        )
        parser.add_argument(
            "--replay",
            metavar="MANIFEST",
            help="a run's manifest (JSON, from its page or the archive): launch the same set, "
            "models, agent configurations, patient, repetitions, turns, seed and clock; refused, "
            "naming each difference, when a data file or stored input no longer matches",
        )
        parser.add_argument(
            "--agent",
            action="append",
            dest="agents",
            help="agent configuration id (default: baseline); repeatable",
        )
        parser.add_argument("--patient-model", default="offline/patient")
        parser.add_argument("--roster-model", default=None)
        parser.add_argument("--repetitions", type=int, default=1)
        parser.add_argument("--concurrency", type=int, default=16)
        parser.add_argument("--max-turns", type=int, default=15)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--no-cache", action="store_true")
        parser.add_argument(
            "--cost-limit",
            type=Decimal,
            default=None,
            help="USD; no new conversation starts once the run spent this much (every model "
            "needs a price: in prices.yaml, set on the Prices page, or with --price)",
        )
        add_price_argument(parser)
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the forecast of calls, tokens and cost per role (from an earlier run) "
            "and exit without creating anything (but the pilot --pilot asks for)",
        )
        parser.add_argument(
            "--pilot",
            type=int,
            metavar="N",
            help="with --dry-run: when no run of the set has finished conversations, first play "
            "a pilot of N of its cases with the offline scripts (free) and forecast from it",
        )
        parser.add_argument(
            "--retry-failed",
            action="store_true",
            help="on resume, retry provider/infrastructure failures",
        )
        parser.add_argument(
            "--inline",
            action="store_true",
            help="run conversations in this process instead of the workers",
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="return once queued; with --inline, stop (exit 1) instead of waiting for "
            "conversations another live process or host holds",
        )

    def handle(self, *args, **opts):
        if opts["pilot"] is not None and not opts["dry_run"]:
            raise CommandError("--pilot goes with --dry-run: it plays a pilot to forecast from.")
        if opts["dry_run"]:
            self._forecast(opts)
            return
        run = self._replay(opts) if opts["replay"] else self._launch_or_resume(opts)
        self._execute(run, opts)
        self._report(run, opts)

    def _replay(self, opts) -> Run:
        flags = {"set": "--set", "models": "--model", "agents": "--agent"}
        given = [flag for name, flag in flags.items() if opts[name]]
        if given:
            raise CommandError(
                f"--replay takes its configuration from the manifest: drop {', '.join(given)}."
            )
        price_options(opts["price"], command="run_benchmark")
        try:
            plan = manifests.replay_plan(manifests.manifest_read(opts["replay"]))
            opts["name"] = opts["name"] or f"{plan.source_name} (replay)"
            run = Run.objects.filter(name=opts["name"]).first()
            if run is not None:
                runs.run_check_config(run, plan.config())
                runs.run_resume(
                    run, retry_failed=opts["retry_failed"], cost_limit_usd=opts["cost_limit"]
                )
                self.stdout.write(f"Resuming run {run.pk} {run.name!r}.")
                return run
            run = manifests.run_replay(
                plan,
                name=opts["name"],
                concurrency=opts["concurrency"],
                use_cache=not opts["no_cache"],
                cost_limit_usd=opts["cost_limit"],
            )
        except (ManifestError, runs.RunError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Launched run {run.pk} {run.name!r}, replaying {plan.source_name!r}.")
        return run

    def _forecast(self, opts) -> None:
        """What the run would call and spend; nothing is created (--price sets no price)."""
        if opts["replay"] or opts["price"]:
            raise CommandError("--dry-run takes --set and --model, not --replay or --price.")
        missing = [f"--{name}" for name in ("set", "models") if not opts[name]]
        if missing:
            raise CommandError(f"Give {', '.join(missing)} to forecast a run.")
        benchmark_set = self._benchmark_set(opts["set"])
        agents = self._agent_choices(opts["models"], opts["agents"] or ["baseline"])
        if opts["pilot"] is not None and forecasts.pilot_needed(benchmark_set):
            self._pilot(benchmark_set, agents, opts["pilot"])
        result = forecasts.run_forecast(
            benchmark_set=benchmark_set,
            agents=agents,
            patient_model=opts["patient_model"],
            roster_model=opts["roster_model"],
            repetitions=opts["repetitions"],
        )
        self.stdout.write(text_table(result))

    def _pilot(self, benchmark_set: BenchmarkSet, agents, conversations: int) -> None:
        try:
            run = forecasts.pilot_launch(
                benchmark_set=benchmark_set, agents=agents, conversations=conversations
            )
        except runs.RunError as error:
            raise CommandError(str(error)) from None
        total = run.conversations.count()
        self.stdout.write(
            f"No finished run of {benchmark_set.name!r} to forecast from: playing a pilot of "
            f"{total} conversation{pluralize(total)} with the offline scripts (run {run.pk})."
        )
        self._execute_inline(run, total, wait=True)

    def _launch_or_resume(self, opts) -> Run:
        missing = [f"--{name}" for name in ("name", "set", "models") if not opts[name]]
        if missing:
            raise CommandError(f"Give {', '.join(missing)} (or --replay MANIFEST).")
        choices = self._agent_choices(opts["models"], opts["agents"] or ["baseline"])
        benchmark_set = self._benchmark_set(opts["set"])
        price_options(opts["price"], command="run_benchmark")
        run = Run.objects.filter(name=opts["name"]).first()
        try:
            if run is None:
                run = runs.run_launch(
                    name=opts["name"],
                    benchmark_set=benchmark_set,
                    agents=choices,
                    patient_model=opts["patient_model"],
                    roster_model=opts["roster_model"],
                    repetitions=opts["repetitions"],
                    concurrency=opts["concurrency"],
                    use_cache=not opts["no_cache"],
                    cost_limit_usd=opts["cost_limit"],
                    max_turns=opts["max_turns"],
                    seed=opts["seed"],
                )
                self.stdout.write(f"Launched run {run.pk} {run.name!r}.")
            else:
                self._resume(run, benchmark_set, choices, opts)
        except runs.RunError as error:
            raise CommandError(str(error)) from None
        return run

    def _report(self, run: Run, opts) -> None:
        progress = runs.run_progress(run)
        cost = cost_text(**accounting.cost_summary(run.model_calls.all()))
        summary = f"Run {run.pk}: {run_counts(progress)}; cost {cost}."
        unfinished = progress["running"] + progress["queued"] + progress["pending"]
        if not unfinished:
            self.stdout.write(self.style.SUCCESS(summary))
        elif opts["no_wait"] and not opts["inline"]:
            self.stdout.write(f"{summary} Not finished: the workers play the rest.")
        else:
            raise CommandError(f"{summary} Not finished: {self._why_unfinished(run)}")

    def _why_unfinished(self, run: Run) -> str:
        run.refresh_from_db(fields=["status", "stop_reason"])
        if run.status != JobStatus.RUNNING:
            reason = f": {run.stop_reason}" if run.stop_reason else "."
            return f"the run is {run.get_status_display().lower()}{reason}"
        return "conversations are still in flight."

    def _resume(self, run, benchmark_set, choices, opts) -> None:
        config = runs.run_config(
            benchmark_set=benchmark_set,
            agents=choices,
            patient_model=opts["patient_model"],
            roster_model=opts["roster_model"] or opts["patient_model"],
            repetitions=opts["repetitions"],
            max_turns=opts["max_turns"],
            seed=opts["seed"],
            clock=run.config["clock"],
        )
        runs.run_check_config(run, config)
        runs.run_resume(run, retry_failed=opts["retry_failed"], cost_limit_usd=opts["cost_limit"])
        self.stdout.write(f"Resuming run {run.pk} {run.name!r}.")

    def _execute(self, run: Run, opts) -> None:
        total = run.conversations.count()
        if opts["inline"]:
            self._execute_inline(run, total, wait=not opts["no_wait"])
            return
        job_start(run)  # sent at once: a command runs outside a transaction
        held = held_work_message(f"run {run.pk} {run.name!r}")
        if held:
            raise CommandError(held)
        if not opts["no_wait"]:
            health = worker_health(waiting=True, job=run)
            if health.stalled:
                self.stderr.write(stalled_message(health))
            wait_until(
                lambda: _settled(run),
                total=total,
                label="conversations",
                stop=lambda: _stopped(run),
            )

    def _execute_inline(self, run: Run, total: int, *, wait: bool) -> None:
        told: set[int] = set()

        def reclaimed(taken: list[runs.Reclaimed]) -> None:
            for item in taken:
                self.stdout.write(
                    f"Reclaimed {item.count} conversation{pluralize(item.count)} left by a "
                    f"stopped process (pid {item.holder.pid})."
                )

        def held(work: runs.HeldWork) -> None:
            message = held_message(work)
            if not wait:
                raise CommandError(f"{message}; not waiting (--no-wait). Run again later.")
            if work.count not in told:  # said again only when the number changes
                told.add(work.count)
                self.stdout.write(f"{message}; waiting - Ctrl-C to stop.")

        with progress_bar(total, "conversations") as bar:

            def tick() -> None:
                bar.update(_settled(run) - bar.n)

            run_execute_inline(
                run,
                threads=run.concurrency,
                on_progress=tick,
                on_reclaimed=reclaimed,
                on_held=held,
            )

    def _agent_choices(self, models, agent_ids):
        agent_services.agent_configs_ensure_shipped()
        latest = {c.slug: c for c in agent_services.latest_agent_configs()}
        missing = [a for a in agent_ids if a not in latest]
        if missing:
            raise CommandError(
                f"Unknown agent configuration(s): {', '.join(missing)}; "
                f"known: {', '.join(sorted(latest))}."
            )
        return [runs.AgentChoice(model, latest[a]) for model in models for a in agent_ids]

    def _benchmark_set(self, key: str) -> BenchmarkSet:
        found = (
            BenchmarkSet.objects.filter(pk=int(key))
            if key.isdigit()
            else BenchmarkSet.objects.filter(name=key)
        )
        benchmark_set = found.order_by("-created_at").first()
        if benchmark_set is None:
            raise CommandError(f"No benchmark set {key!r}.")
        return benchmark_set


def held_message(work: runs.HeldWork) -> str:
    """ "4 conversations are held by another process (pid 81 on this host) until 14:05 UTC"."""
    holders = [holder.describe() for holder in work.holders]
    if work.queued_for_workers:
        holders.append(f"{work.queued_for_workers} queued for a worker")
    until = timezone.localtime(work.until).strftime("%H:%M %Z")
    verb = "is" if work.count == 1 else "are"
    return (
        f"{work.count} conversation{pluralize(work.count)} {verb} held by another process "
        f"({'; '.join(holders)}) until {until}"
    )


def _settled(run: Run) -> int:
    return run.conversations.filter(status__in=("finished", "failed", "cancelled")).count()


def _stopped(run: Run) -> bool:
    run.refresh_from_db(fields=["status"])
    return run.status != JobStatus.RUNNING


def run_counts(progress: dict) -> str:
    """Every state a run's conversations are in, unfinished ones included."""
    return (
        f"{progress['finished']} finished, {progress['failed']} failed, "
        f"{progress['cancelled']} cancelled, {progress['running']} running, "
        f"{progress['queued']} queued, {progress['pending']} pending"
    )
