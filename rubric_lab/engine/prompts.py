"""Prompt templates for the pipeline stages and the criterion judge, as data files.

Each file in rubric_lab/data/prompts/ holds a system part and a user part split by the
`<!-- system -->` and `<!-- user -->` markers (the jury's judge template uses the same form),
with string.Template placeholders. Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "data" / "prompts"
SYSTEM_MARKER = "<!-- system -->"
USER_MARKER = "<!-- user -->"
PROMPT_NAMES = ("routing", "evidence", "facts", "intent", "synthesis", "audit", "judge")


class PromptError(ValueError):
    """A prompt file cannot be used: missing marker, unknown name or missing value."""


@lru_cache(maxsize=16)
def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> tuple[Template, Template]:
    if name not in PROMPT_NAMES:
        raise PromptError(f"no prompt named {name!r}; known: {', '.join(PROMPT_NAMES)}")
    text = (directory / f"{name}.md").read_text(encoding="utf-8")
    if text.count(SYSTEM_MARKER) != 1 or text.count(USER_MARKER) != 1:
        raise PromptError(f"{name}.md needs exactly one {SYSTEM_MARKER} and one {USER_MARKER}")
    before_user, user = text.split(USER_MARKER)
    system = before_user.split(SYSTEM_MARKER)[1]
    return Template(system.strip()), Template(user.strip())


def render_prompt(name: str, values: Mapping[str, Any]) -> tuple[str, str]:
    """(system, user) for a prompt; a placeholder without a value is an error, not a blank."""
    system, user = load_prompt(name)
    try:
        return system.substitute(values), user.substitute(values)
    except KeyError as missing:
        raise PromptError(f"{name}.md needs a value for {missing}") from None


def render_json(value: Any) -> str:
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def render_passages(passages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(
        f"[{p['passage_id']}] {p['title']} ({p['source']}, version {p['source_version']})\n"
        f"{p['text']}"
        for p in passages
    )
