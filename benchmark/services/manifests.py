"""A run's manifest (benchmark.engine.manifest): built from the run, its rows and what it kept
at launch; and its replay: check every input against what the site holds now, then launch the
same configuration (`run_benchmark --replay`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchmark.engine import manifest as fmt
from benchmark.models import AgentConfig, BenchmarkSet, Run
from benchmark.services import provenance, runs
from llm.engine import generation

# How the manifest says where the provider seeds come from.
PROVIDER_SEEDS = (
    "each call's seed is derived from its conversation's seed and its role "
    "(llm/engine/seeds.py), and sent only to models whose family takes one"
)


def run_manifest(run: Run) -> dict:
    """The run's manifest. The data files' hashes and the environment are those kept at
    launch; a run launched before manifests existed gets today's, and says so."""
    recorded = "launch" if run.inputs else "export"
    inputs = run.inputs or provenance.launch_inputs()
    return fmt.build_manifest(
        run=_run_section(run),
        data_files=inputs["data_files"],
        stored=_stored(run),
        models=_models(run),
        seeds=_seeds(run),
        fingerprints=_fingerprints(run),
        environment=inputs["environment"],
        recorded=recorded,
    )


def run_manifest_text(run: Run) -> str:
    return fmt.manifest_text(run_manifest(run))


def manifest_file_name(run: Run) -> str:
    return f"run-{run.pk}-manifest.json"


def _run_section(run: Run) -> dict:
    config = run.config
    return {
        "name": run.name,
        "benchmark_set": run.benchmark_set_id,
        "benchmark_set_name": run.benchmark_set.name,
        "agents": [_agent_entry(agent) for agent in run.agents.select_related("agent_config")],
        "patient_model": run.patient_model,
        "roster_model": run.roster_model,
        "repetitions": run.repetitions,
        "max_turns": run.max_turns,
        "seed": run.seed,
        "clock": config.get("clock", ""),
        "concurrency": run.concurrency,
        "use_cache": run.use_cache,
        "config": config,
        "config_hash": run.config_hash,
    }


def _agent_entry(agent) -> dict:
    config = agent.agent_config  # None for an imported run's replies
    return {
        "model": agent.model,
        "agent": config.slug if config else None,
        "agent_fingerprint": config.fingerprint if config else None,
    }


def _stored(run: Run) -> dict:
    """Hashes of the inputs the database held: the distribution and each agent configuration."""
    distribution = run.benchmark_set.distribution
    agents = {
        agent.agent_config.slug: _agent_hashes(agent.agent_config)
        for agent in run.agents.select_related("agent_config")
        if agent.agent_config is not None
    }
    return {
        "distribution": None
        if distribution is None
        else {
            "name": distribution.name,
            "fingerprint": distribution.fingerprint,
            "sha256": fmt.sha256_text(distribution.yaml_text),
        },
        "agent_configs": agents,
        "patient_prompt_version": run.patient_prompt_version,
    }


def _agent_hashes(config: AgentConfig) -> dict:
    return {"fingerprint": config.fingerprint, "sha256": fmt.sha256_text(config.yaml_text)}


def _models(run: Run) -> dict:
    """Each model string the run calls, with its generation settings and family."""
    roles: dict[str, list[str]] = {}
    for agent in run.agents.all():
        roles.setdefault(agent.model, []).append("assistant")
    roles.setdefault(run.patient_model, []).append("patient")
    roles.setdefault(run.roster_model, []).append("roster")
    return {model: _model_entry(model, sorted(set(used))) for model, used in roles.items() if model}


def _model_entry(model: str, roles: list[str]) -> dict:
    entry: dict = {"roles": roles, "label": generation.model_label(model)}
    try:
        settings, family = generation.settings_of(model), generation.family_of(model)
    except generation.SettingsError as error:  # an imported run's model this site cannot call
        return entry | {"settings_error": str(error)}
    return entry | {
        "family": family.name,
        "settings": settings.given(),
        "sends_seed": generation.takes_seed(settings, family),
    }


def _seeds(run: Run) -> dict:
    conversations = run.conversations.values_list(
        "entry__index", "run_agent__label", "repetition", "seed"
    )
    pairs = [(f"{entry}/{agent}/{rep}", seed) for entry, agent, rep, seed in conversations]
    return {
        "run": run.seed,
        "set_sampler": run.benchmark_set.sampler_seed,
        "conversations": len(pairs),
        "conversation_seeds_sha256": fmt.seeds_digest(pairs),
        "provider_seeds": PROVIDER_SEEDS,
    }


def _fingerprints(run: Run) -> dict[str, list[str]]:
    """The backends that answered, by model: more than one means the provider changed it."""
    found: dict[str, list[str]] = {}
    rows = run.model_calls.exclude(fingerprint="").values_list("model", "fingerprint").distinct()
    for model, fingerprint in rows:
        found.setdefault(model, []).append(fingerprint)
    return found


# --- replay ------------------------------------------------------------------------------------


class ReplayRefused(runs.RunError):
    """Some input no longer matches the manifest; each difference is named."""

    def __init__(self, found: list[fmt.Difference]):
        self.differences = found
        lines = "\n".join(f"  {difference.describe()}" for difference in found)
        super().__init__(
            f"Not replayed: {len(found)} input(s) differ from the manifest "
            f"(name: hash the run used, hash found now):\n{lines}"
        )


@dataclass(frozen=True)
class ReplayPlan:
    """The configuration a manifest describes, on this site's rows."""

    source_name: str
    benchmark_set: BenchmarkSet
    agents: list[runs.AgentChoice]
    patient_model: str
    roster_model: str
    repetitions: int
    max_turns: int
    seed: int
    clock: datetime

    def config(self) -> dict:
        return runs.run_config(
            benchmark_set=self.benchmark_set,
            agents=self.agents,
            patient_model=self.patient_model,
            roster_model=self.roster_model,
            repetitions=self.repetitions,
            max_turns=self.max_turns,
            seed=self.seed,
            clock=self.clock.isoformat(),
        )


def manifest_read(path: str | Path) -> dict:
    """A manifest file read and its shape checked; ManifestError says what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise fmt.ManifestError(f"cannot read {path}: {error}") from None
    return fmt.parse_manifest(text)


def replay_plan(manifest: dict) -> ReplayPlan:
    """The manifest's configuration, once every data file, stored input and the resulting
    run configuration match it; ReplayRefused names each that does not."""
    found = fmt.differences(manifest["data_files"], provenance.run_data_files())
    found += _stored_differences(manifest)
    if found:
        raise ReplayRefused(found)
    plan = _plan(manifest)
    config = plan.config()
    expected = manifest["run"].get("config") or {}
    changed = sorted(k for k in set(config) | set(expected) if config.get(k) != expected.get(k))
    if changed:
        raise ReplayRefused(
            [
                fmt.Difference(f"run configuration: {key}", "as launched", "changed")
                for key in changed
            ]
        )
    return plan


def _stored_differences(manifest: dict) -> list[fmt.Difference]:
    run, stored = manifest["run"], manifest["stored"]
    benchmark_set = BenchmarkSet.objects.filter(pk=run["benchmark_set"]).first()
    if benchmark_set is None:
        return [fmt.Difference(f"benchmark set {run['benchmark_set']}", "present", fmt.MISSING)]
    found = []
    distribution = stored.get("distribution")
    if distribution and benchmark_set.distribution is not None:
        now = fmt.sha256_text(benchmark_set.distribution.yaml_text)
        if now != distribution["sha256"]:
            name = f"distribution {distribution['name']!r} (stored)"
            found.append(fmt.Difference(name, distribution["sha256"], now))
    for slug, hashes in sorted(stored.get("agent_configs", {}).items()):
        config = AgentConfig.objects.filter(slug=slug, fingerprint=hashes["fingerprint"]).first()
        now = fmt.sha256_text(config.yaml_text) if config else fmt.MISSING
        if now != hashes["sha256"]:
            found.append(
                fmt.Difference(f"agent configuration {slug!r} (stored)", hashes["sha256"], now)
            )
    return found


def _plan(manifest: dict) -> ReplayPlan:
    run = manifest["run"]
    if any(agent.get("agent") is None for agent in run["agents"]):
        raise fmt.ManifestError(
            f"run {run.get('name')!r} was imported (its conversations were played elsewhere): "
            "there is no configuration to launch again"
        )
    try:
        agents = [
            runs.AgentChoice(
                agent["model"],
                AgentConfig.objects.get(
                    slug=agent["agent"], fingerprint=agent["agent_fingerprint"]
                ),
            )
            for agent in run["agents"]
        ]
        clock = datetime.fromisoformat(run["clock"])
    except (KeyError, TypeError, ValueError, AgentConfig.DoesNotExist) as error:
        raise fmt.ManifestError(f"the manifest's run section cannot be replayed: {error}") from None
    return ReplayPlan(
        source_name=run.get("name", "run"),
        benchmark_set=BenchmarkSet.objects.get(pk=run["benchmark_set"]),
        agents=agents,
        patient_model=run["patient_model"],
        roster_model=run["roster_model"],
        repetitions=int(run["repetitions"]),
        max_turns=int(run["max_turns"]),
        seed=int(run["seed"]),
        clock=clock,
    )


def run_replay(
    plan: ReplayPlan,
    *,
    name: str,
    concurrency: int,
    use_cache: bool,
    cost_limit_usd=None,
    user=None,
) -> Run:
    """Launch the plan's configuration as a new run, with the same clock as the original."""
    return runs.run_launch(
        name=name,
        benchmark_set=plan.benchmark_set,
        agents=plan.agents,
        patient_model=plan.patient_model,
        roster_model=plan.roster_model,
        repetitions=plan.repetitions,
        concurrency=concurrency,
        use_cache=use_cache,
        cost_limit_usd=cost_limit_usd,
        max_turns=plan.max_turns,
        seed=plan.seed,
        clock=plan.clock,
        user=user,
    )
