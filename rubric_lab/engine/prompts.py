"""Prompt templates of the rubric lab, as data files: the pipeline stages and the criterion
judge in rubric_lab/data/prompts/, the evaluation side (near-miss edits, pairwise judging,
coverage, critique-then-refine) in rubric_lab/data/evaluation/.

Each file holds a system part and a user part split by the `<!-- system -->` and
`<!-- user -->` markers (the jury's judge template uses the same form; a Markdown viewer hides
them), with string.Template placeholders. Rendering refuses a missing value, so a prompt can
never go out with a hole in it. Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
PROMPTS_DIR = DATA_DIR / "prompts"
EVALUATION_DIR = DATA_DIR / "evaluation"
SYSTEM_MARKER = "<!-- system -->"
USER_MARKER = "<!-- user -->"
PROMPT_NAMES = (
    "routing",
    "evidence",
    "facts",
    "intent",
    "synthesis",
    "audit",
    "direct",
    "judge",
)


class PromptError(ValueError):
    """A prompt file cannot be used: missing marker, unknown name or missing value."""


@lru_cache(maxsize=32)
def load_template(path: Path) -> tuple[Template, Template]:
    """The (system, user) templates of one prompt file."""
    text = path.read_text(encoding="utf-8")
    if text.count(SYSTEM_MARKER) != 1 or text.count(USER_MARKER) != 1:
        raise PromptError(f"{path.name} needs exactly one {SYSTEM_MARKER} and one {USER_MARKER}")
    before_user, user = text.split(USER_MARKER)
    system = before_user.split(SYSTEM_MARKER)[1]
    return Template(system.strip()), Template(user.strip())


def load_prompt(name: str) -> tuple[Template, Template]:
    if name not in PROMPT_NAMES:
        raise PromptError(f"no prompt named {name!r}; known: {', '.join(PROMPT_NAMES)}")
    return load_template(PROMPTS_DIR / f"{name}.md")


def render_prompt(name: str, values: Mapping[str, Any]) -> tuple[str, str]:
    """(system, user) for a pipeline or judge prompt."""
    return _substitute(name, load_prompt(name), values)


def render_evaluation_prompt(name: str, **values: str) -> tuple[str, str]:
    """(system, user) for an evaluation prompt (rubric_lab/data/evaluation/<name>.md)."""
    return _substitute(name, load_template(EVALUATION_DIR / f"{name}.md"), values)


def _substitute(name: str, templates: tuple[Template, Template], values) -> tuple[str, str]:
    system, user = templates
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
