"""Prompt files as versioned data: loading, validation and rendering.

Each prompt is a Markdown file in benchmark/data/prompts/ with YAML front matter holding a
`version` and optional `fragments` (short texts the renderer chooses between, such as the
caregiver variant of the patient's role). The body is made of <section>...</section> blocks
with {{placeholder}} slots. A prompt's content hash covers the whole file, so any edit, even
one that forgets to bump the version, is visible in stored results.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from benchmark.engine.agents.personalities import PersonalityCatalog, default_personalities

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "data" / "prompts"
PATIENT_PROMPT_FILE = "patient.md"
TERMINATION_TOKEN = "[DROPPED OFF CONVERSATION]"

PATIENT_SECTIONS = (
    "role",
    "current_datetime",
    "persona",
    "background_knowledge",
    "task",
    "rules",
    "ending",
)
PATIENT_PLACEHOLDERS = frozenset(
    {
        "role",
        "now",
        "profile",
        "personality",
        "story",
        "task",
        "care_preference",
        "termination_token",
        "patient_name",
        "caregiver",
        "task_label",
        "care_preference_label",
    }
)
PATIENT_FRAGMENTS = ("role_self", "role_caregiver", "opening_cue", "task_fallback")
PATIENT_FRAGMENT_TABLES = ("care_preference", "task_goals")
# The framework fills these two in every assistant prompt; a prompt may not ask for more,
# because agent configurations cannot supply extra values.
ASSISTANT_PLACEHOLDERS = frozenset({"now", "profile"})

_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_SECTION = re.compile(r"^<([a-z_]+)>\s*$.*?^</\1>\s*$", re.DOTALL | re.MULTILINE)


class PromptError(ValueError):
    """A prompt file is malformed or a render is missing a value."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str
    body: str
    content_hash: str
    fragments: dict[str, Any] = field(default_factory=dict)

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER.findall(self.body))

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(match.group(1) for match in _SECTION.finditer(self.body))

    def render(self, values: Mapping[str, str]) -> str:
        return _fill(self.body, values, where=self.name)

    def fragment(self, name: str, values: Mapping[str, str]) -> str:
        return _fill(self.fragments[name], values, where=f"{self.name} fragment {name}")

    def table_entry(self, table: str, key: str) -> str | None:
        """Look up `key` in a fragment table, ignoring case, '_' / '-' / ' ' differences."""
        wanted = _normalise_key(key)
        for entry_key, text in self.fragments[table].items():
            if _normalise_key(entry_key) == wanted:
                return text
        return None


def parse_prompt(text: str, *, name: str) -> PromptTemplate:
    match = _FRONT_MATTER.match(text)
    if not match:
        raise PromptError(f"{name}: needs YAML front matter between '---' lines with a version")
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as error:
        raise PromptError(f"{name}: front matter is not valid YAML: {error}") from error
    if not isinstance(meta, dict) or not str(meta.get("version", "")).strip():
        raise PromptError(f"{name}: front matter must set a non-empty 'version'")
    fragments = meta.get("fragments") or {}
    if not isinstance(fragments, dict):
        raise PromptError(f"{name}: 'fragments' must be a mapping")
    return PromptTemplate(
        name=name,
        version=str(meta["version"]),
        body=text[match.end() :].strip() + "\n",
        content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        fragments=fragments,
    )


def load_prompt(path: Path) -> PromptTemplate:
    path = Path(path)
    if not path.is_file():
        raise PromptError(f"prompt file not found: {path}")
    return parse_prompt(path.read_text(encoding="utf-8"), name=path.name)


def load_patient_prompt(path: Path = PROMPTS_DIR / PATIENT_PROMPT_FILE) -> PromptTemplate:
    prompt = load_prompt(path)
    _check_patient_prompt(prompt)
    return prompt


def load_assistant_prompt(path: Path) -> PromptTemplate:
    prompt = load_prompt(path)
    unknown = prompt.placeholders - ASSISTANT_PLACEHOLDERS
    if unknown:
        raise PromptError(
            f"{prompt.name}: unknown placeholders {sorted(unknown)}; "
            f"assistant prompts may use only {sorted(ASSISTANT_PLACEHOLDERS)}"
        )
    return prompt


@lru_cache(maxsize=1)
def default_patient_prompt() -> PromptTemplate:
    return load_patient_prompt()


def format_now(now: datetime) -> str:
    zone = f" ({now.tzname()})" if now.tzinfo else ""
    return f"{now:%A, %Y-%m-%d %H:%M}{zone}"


def format_profile(profile: Mapping[str, Any]) -> str:
    """The profile as the prompts show it: indented JSON. Every agent's conversation of a case
    renders the same profile, and indented JSON comes from Python's own encoder, five times
    slower than the compact one in C: the compact text names the indented text to reuse. A
    profile's keys are strings (it comes from JSON), so the compact text holds every one."""
    return _indented(json.dumps(profile, ensure_ascii=False, separators=(",", ":"), default=str))


@lru_cache(maxsize=256)
def _indented(compact: str) -> str:
    # Decoded and encoded again, the text is the one the profile gives directly: same keys in
    # the same order, same values (default=str has already turned the others into strings).
    return json.dumps(json.loads(compact), indent=2, ensure_ascii=False)


def is_caregiver_voice(profile: Mapping[str, Any], seed: Mapping[str, Any]) -> bool:
    return bool(profile.get("caregiver")) or seed.get("age_group") == "pediatric"


def render_patient_system(
    *,
    profile: Mapping[str, Any],
    story: str,
    seed: Mapping[str, Any],
    now: datetime,
    prompt: PromptTemplate | None = None,
    personalities: PersonalityCatalog | None = None,
) -> str:
    prompt = prompt or default_patient_prompt()
    personality = (personalities or default_personalities()).get(str(seed.get("personality")))
    values = _patient_labels(profile, seed)
    role_fragment = "role_caregiver" if is_caregiver_voice(profile, seed) else "role_self"
    values |= {
        "role": prompt.fragment(role_fragment, values),
        "now": format_now(now),
        "profile": format_profile(profile),
        "personality": personality.render(),
        "story": story.strip(),
        "task": _task_goal(prompt, seed, values),
        "care_preference": prompt.table_entry("care_preference", values["care_preference_label"])
        or "",
        "termination_token": TERMINATION_TOKEN,
    }
    return prompt.render(values)


def patient_opening_cue(prompt: PromptTemplate | None = None) -> str:
    return (prompt or default_patient_prompt()).fragment("opening_cue", {})


def render_assistant_system(
    *,
    prompt: PromptTemplate,
    profile: Mapping[str, Any],
    now: datetime,
    extra_instructions: str = "",
) -> str:
    system = prompt.render({"now": format_now(now), "profile": format_profile(profile)})
    if extra_instructions.strip():
        system += f"\n<additional_context>\n{extra_instructions.strip()}\n</additional_context>\n"
    return system


def _patient_labels(profile: Mapping[str, Any], seed: Mapping[str, Any]) -> dict[str, str]:
    name = " ".join(
        str(part) for part in (profile.get("first_name"), profile.get("last_name")) if part
    )
    caregiver = profile.get("caregiver") or {}
    if caregiver.get("name"):
        caregiver_label = f"{caregiver['name']} ({caregiver.get('relationship') or 'caregiver'})"
    else:
        caregiver_label = "the patient's parent"
    subcategory = str(seed.get("task_subcategory") or seed.get("task_category") or "")
    return {
        "patient_name": name or "the patient",
        "caregiver": caregiver_label,
        "task_label": subcategory.replace("_", " "),
        "care_preference_label": str(seed.get("care_preference") or "none"),
    }


def _task_goal(prompt: PromptTemplate, seed: Mapping[str, Any], values: Mapping[str, str]) -> str:
    goal = prompt.table_entry("task_goals", str(seed.get("task_subcategory") or ""))
    return goal or prompt.fragment("task_fallback", values)


def _check_patient_prompt(prompt: PromptTemplate) -> None:
    missing_sections = [name for name in PATIENT_SECTIONS if name not in prompt.sections]
    if missing_sections:
        raise PromptError(f"{prompt.name}: missing sections {missing_sections}")
    unknown = prompt.placeholders - PATIENT_PLACEHOLDERS
    if unknown:
        raise PromptError(f"{prompt.name}: unknown placeholders {sorted(unknown)}")
    for name in PATIENT_FRAGMENTS:
        if not isinstance(prompt.fragments.get(name), str):
            raise PromptError(f"{prompt.name}: fragment {name!r} must be a text")
    for table in PATIENT_FRAGMENT_TABLES:
        if not isinstance(prompt.fragments.get(table), dict):
            raise PromptError(f"{prompt.name}: fragment {table!r} must map keys to texts")


def _fill(template: str, values: Mapping[str, str], *, where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise PromptError(f"{where}: no value for placeholder {{{{{key}}}}}")
        return str(values[key])

    return _PLACEHOLDER.sub(replace, template)


def _normalise_key(key: str) -> str:
    return re.sub(r"[\s_-]+", " ", str(key).strip().lower())
