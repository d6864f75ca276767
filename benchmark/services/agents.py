"""Agent configurations: the shipped YAML files plus any a researcher adds."""

from benchmark.engine.agents.agent_config import AGENTS_DIR, parse_agent_config
from benchmark.models import AgentConfig


def agent_config_save(*, yaml_text: str) -> AgentConfig:
    """Validate and store; the same text twice gives the same row (versions by fingerprint)."""
    config = parse_agent_config(yaml_text)
    row, _ = AgentConfig.objects.get_or_create(
        slug=config.id,
        fingerprint=config.fingerprint,
        defaults={"name": config.name, "yaml_text": yaml_text},
    )
    return row


def agent_configs_ensure_shipped() -> list[AgentConfig]:
    return [
        agent_config_save(yaml_text=path.read_text(encoding="utf-8"))
        for path in sorted(AGENTS_DIR.glob("*.yaml"))
    ]


def latest_agent_configs() -> list[AgentConfig]:
    """The newest version of each configuration slug."""
    latest: dict[str, AgentConfig] = {}
    for config in AgentConfig.objects.order_by("slug", "-created_at"):
        latest.setdefault(config.slug, config)
    return list(latest.values())
