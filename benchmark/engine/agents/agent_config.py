"""Assistant agent configurations as data (benchmark/data/agents/*.yaml).

A configuration names a system prompt file and may add extra instructions; users register
variants (such as the clinically grounded agent) by dropping another YAML file in the folder
and compare them with the baseline on the same cases. The fingerprint covers every field and
the content of the prompt file, so any edit, including one to the prompt file alone, yields a
new fingerprint, and two runs with equal fingerprints ran the same agent.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from benchmark.engine.agents.prompts import (
    PROMPTS_DIR,
    PromptError,
    PromptTemplate,
    load_assistant_prompt,
    render_assistant_system,
)
from common import safe_yaml

AGENTS_DIR = Path(__file__).resolve().parents[2] / "data" / "agents"

_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_REQUIRED_KEYS = ("id", "name", "prompt")
_OPTIONAL_KEYS = ("description", "extra_instructions")


class AgentConfigError(ValueError):
    """An agent configuration is malformed, points at a bad prompt, or does not exist."""


@dataclass(frozen=True)
class AgentConfig:
    id: str
    name: str
    description: str
    prompt_file: str
    prompt: PromptTemplate
    extra_instructions: str = ""

    @property
    def fingerprint(self) -> str:
        identity = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "prompt_file": self.prompt_file,
            "prompt_hash": self.prompt.content_hash,
            "extra_instructions": self.extra_instructions,
        }
        canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def render_system(self, *, profile: dict[str, Any], now: datetime) -> str:
        return render_assistant_system(
            prompt=self.prompt,
            profile=profile,
            now=now,
            extra_instructions=self.extra_instructions,
        )


def parse_agent_config(
    text: str, *, prompts_dir: Path = PROMPTS_DIR, source: str = "agent config"
) -> AgentConfig:
    try:
        data = safe_yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise AgentConfigError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise AgentConfigError(f"{source}: must be a mapping")
    _check_keys(data, source)
    prompt_file = str(data["prompt"])
    try:
        prompt = load_assistant_prompt(_prompt_path(prompts_dir, prompt_file, source))
    except PromptError as error:
        raise AgentConfigError(f"{source}: {error}") from error
    return AgentConfig(
        id=str(data["id"]),
        name=str(data["name"]).strip(),
        description=" ".join(str(data.get("description") or "").split()),
        prompt_file=prompt_file,
        prompt=prompt,
        extra_instructions=str(data.get("extra_instructions") or "").strip(),
    )


def load_agent_configs(
    folder: Path = AGENTS_DIR, *, prompts_dir: Path = PROMPTS_DIR
) -> dict[str, AgentConfig]:
    """Every *.yaml / *.yml file in `folder`, keyed by id (sorted by id)."""
    configs: dict[str, AgentConfig] = {}
    paths = sorted([*Path(folder).glob("*.yaml"), *Path(folder).glob("*.yml")])
    for path in paths:
        config = parse_agent_config(
            path.read_text(encoding="utf-8"), prompts_dir=prompts_dir, source=path.name
        )
        if config.id in configs:
            raise AgentConfigError(f"{path.name}: agent id {config.id!r} is already used")
        configs[config.id] = config
    return dict(sorted(configs.items()))


def get_agent_config(
    agent_id: str, folder: Path = AGENTS_DIR, *, prompts_dir: Path = PROMPTS_DIR
) -> AgentConfig:
    configs = load_agent_configs(folder, prompts_dir=prompts_dir)
    try:
        return configs[agent_id]
    except KeyError:
        known = ", ".join(configs) or "none"
        raise AgentConfigError(f"unknown agent {agent_id!r}; known: {known}") from None


def _check_keys(data: dict[str, Any], source: str) -> None:
    missing = [key for key in _REQUIRED_KEYS if not str(data.get(key) or "").strip()]
    if missing:
        raise AgentConfigError(f"{source}: missing {', '.join(missing)}")
    unknown = sorted(set(data) - set(_REQUIRED_KEYS) - set(_OPTIONAL_KEYS))
    if unknown:
        raise AgentConfigError(f"{source}: unknown keys {', '.join(map(str, unknown))}")
    if not _ID.match(str(data["id"])):
        raise AgentConfigError(
            f"{source}: id {data['id']!r} must be lowercase letters, digits, '_' or '-'"
        )


def _prompt_path(prompts_dir: Path, prompt_file: str, source: str) -> Path:
    # Prompts must live in the prompts folder so a configuration cannot read arbitrary files.
    root = Path(prompts_dir).resolve()
    path = (root / prompt_file).resolve()
    if root not in path.parents:
        raise AgentConfigError(f"{source}: prompt {prompt_file!r} must be inside {root}")
    return path
