"""Replaying chosen conversations of a run in a new run: the same cases, agents, repetitions,
seeds, clock, configuration and case rosters (the same practice to book into), and nothing
else (the fidelity review's "re-run flagged conversations"). The response cache is off for
the replay: an answer replayed from it would repeat the very conversation being replaced."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from benchmark.models import CaseRoster, Conversation, Run, RunAgent
from benchmark.services.runs import RunError, patient_prompt_version
from jobs.models import JobStatus


@transaction.atomic
def run_replay(
    run: Run, *, conversations: list[Conversation], name: str = "", user=None, reason: str = ""
) -> Run:
    """A new run (running; start it with job_start once committed) of `conversations`, all of
    `run`, each with its case, agent, repetition, seed and clock."""
    chosen = [c for c in conversations if c.run_id == run.pk]
    if not chosen:
        raise RunError("Choose at least one conversation of the run to replay.")
    if run.patient_prompt_version != patient_prompt_version():
        raise RunError(
            "The patient prompt changed since this run was launched; a replay would not play "
            "the same patient. Launch a new run instead."
        )
    replay = Run(
        name=name or f"{run.name} (replay of {len(chosen)} conversations)",
        benchmark_set=run.benchmark_set,
        patient_model=run.patient_model,
        patient_prompt_version=run.patient_prompt_version,
        roster_model=run.roster_model,
        repetitions=run.repetitions,
        concurrency=run.concurrency,
        use_cache=False,
        max_turns=run.max_turns,
        seed=run.seed,
        # The same configuration, so its hash is the run's: the audit trail says what it replays.
        config=run.config,
        config_hash=run.config_hash,
        status=JobStatus.RUNNING,
        created_by=user,
        started_at=timezone.now(),
    )
    replay.full_clean()
    replay.save()
    agents: dict[int, RunAgent] = {}
    for agent in RunAgent.objects.filter(pk__in={c.run_agent_id for c in chosen}):
        agents[agent.pk] = RunAgent.objects.create(
            run=replay, model=agent.model, agent_config=agent.agent_config, label=agent.label
        )
    Conversation.objects.bulk_create(
        Conversation(
            run=replay,
            run_agent=agents[c.run_agent_id],
            entry_id=c.entry_id,
            repetition=c.repetition,
            clock=c.clock,
            seed=c.seed,
        )
        for c in sorted(chosen, key=lambda c: c.pk)
    )
    written = run.case_rosters.filter(seed__in={c.seed for c in chosen}, roster__isnull=False)
    CaseRoster.objects.bulk_create(
        CaseRoster(run=replay, seed=row.seed, roster=row.roster) for row in written
    )
    audit_record(
        actor=user,
        action="run.replayed",
        target=replay,
        after={"replay_of": run.pk, "conversations": len(chosen), "reason": reason},
    )
    return replay
