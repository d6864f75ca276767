"""Prompt files of the evaluation side of the lab (near-miss edits, pairwise judging,
coverage, critique-then-refine): rubric_lab/data/evaluation/<name>.md.

A file holds a system part and a user part, each after its HTML comment marker (hidden by a
Markdown viewer), with string.Template placeholders. Rendering refuses a missing value, so a
prompt can never go out with a hole in it.

Pure Python: no Django.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "data" / "evaluation"
SYSTEM_MARKER = "<!-- system -->"
USER_MARKER = "<!-- user -->"


@lru_cache(maxsize=32)
def _parts(name: str) -> tuple[Template, Template]:
    text = (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")
    if text.count(SYSTEM_MARKER) != 1 or text.count(USER_MARKER) != 1:
        raise ValueError(f"prompt {name!r} needs one {SYSTEM_MARKER} and one {USER_MARKER}")
    system, user = text.split(SYSTEM_MARKER)[1].split(USER_MARKER)
    return Template(system.strip()), Template(user.strip())


def render(name: str, **values: str) -> tuple[str, str]:
    """(system, user) of prompt `name` with every placeholder filled."""
    system, user = _parts(name)
    return system.substitute(values), user.substitute(values)
