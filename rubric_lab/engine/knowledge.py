"""The knowledge base as data: guideline-style passages with source labels and versions.

The shipped corpus lives in rubric_lab/data/knowledge/*.yaml, one file per topic:

    source: <label shown with every passage>
    version: <the source's version>
    topic: <slug>
    passages:
      - id: <slug, unique across the whole corpus>
        title: <short title>
        text: <the passage>
        tags: [<slug>, ...]        # optional

Researchers upload more passages as CSV, JSON or YAML rows with the columns of `FIELDS`.
Every problem is collected and named by its row before anything is accepted, so a caller can
refuse the whole upload and save nothing. Pure Python: no Django.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from common import json_text, safe_yaml

CORPUS_DIR = Path(__file__).resolve().parent.parent / "data" / "knowledge"
FIELDS = ("passage_id", "topic", "title", "text", "source", "source_version", "tags")
REQUIRED = ("passage_id", "topic", "title", "text", "source", "source_version")
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,79}$")
MIN_TEXT_CHARS = 40
# The longest each short field may be (the database columns' widths).
MAX_FIELD_CHARS = {"passage_id": 80, "topic": 60, "title": 200, "source": 200, "source_version": 40}
MAX_TEXT_CHARS = 4000


class CorpusError(ValueError):
    """Passages that cannot be accepted; `problems` names every bad row and field."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Passage:
    passage_id: str
    topic: str
    title: str
    text: str
    source: str
    source_version: str
    tags: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "passage_id": self.passage_id,
            "topic": self.topic,
            "title": self.title,
            "text": self.text,
            "source": self.source,
            "source_version": self.source_version,
            "tags": list(self.tags),
        }

    @property
    def searchable_text(self) -> str:
        return " ".join((self.title, self.text, " ".join(self.tags)))


def load_shipped_corpus(directory: Path = CORPUS_DIR) -> list[Passage]:
    """Every passage of the shipped corpus, validated as a whole (ids unique across files)."""
    rows: list[tuple[str, Mapping[str, Any]]] = []
    problems: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            rows.extend(_rows_of_topic_file(path))
        except CorpusError as error:
            problems.extend(error.problems)
    if problems:
        raise CorpusError(problems)
    return validate_rows(rows)


def _rows_of_topic_file(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("passages"), list):
        raise CorpusError([f"{path.name}: needs source, version, topic and a passages list"])
    shared = {
        "source": data.get("source"),
        "source_version": str(data.get("version", "")),
        "topic": data.get("topic"),
    }
    rows = []
    for number, passage in enumerate(data["passages"], start=1):
        if not isinstance(passage, dict):
            raise CorpusError([f"{path.name} passage {number}: not a mapping"])
        row = {**shared, **passage, "passage_id": passage.get("id")}
        row.pop("id", None)
        rows.append((f"{path.name} passage {number}", row))
    return rows


def parse_upload(filename: str, content: bytes) -> list[Passage]:
    """Passages from an uploaded file (.csv, .json or .yaml/.yml); raises CorpusError naming
    every bad row. Row numbers count data rows from 1 (CSV: the header is row 0)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CorpusError([f"{filename}: not UTF-8 text"]) from None
    suffix = Path(filename).suffix.lower()
    if suffix == ".csv":
        records = list(csv.DictReader(io.StringIO(text)))
    elif suffix in (".json", ".yaml", ".yml"):
        records = _records_from_structured(filename, text, suffix)
    else:
        raise CorpusError([f"{filename}: use a .csv, .json, .yaml or .yml file"])
    if not records:
        raise CorpusError([f"{filename}: no passages in the file"])
    return validate_rows((f"row {number}", record) for number, record in enumerate(records, 1))


def _records_from_structured(filename: str, text: str, suffix: str) -> list[Any]:
    try:
        data = json_text.loads(text) if suffix == ".json" else safe_yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise CorpusError([f"{filename}: cannot be read ({error})"]) from None
    if isinstance(data, dict) and isinstance(data.get("passages"), list):
        data = data["passages"]
    if not isinstance(data, list):
        raise CorpusError([f"{filename}: expected a list of passages (or a 'passages' list)"])
    return data


def validate_rows(rows: Iterable[tuple[str, Any]]) -> list[Passage]:
    """Check every (label, row); all problems are collected before raising."""
    passages: list[Passage] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for label, row in rows:
        passage, row_problems = _passage_of(row)
        if passage is not None and passage.passage_id in seen:
            row_problems.append(
                f"passage_id {passage.passage_id!r} repeats {seen[passage.passage_id]}"
            )
        problems.extend(f"{label}: {problem}" for problem in row_problems)
        if passage is not None and not row_problems:
            seen[passage.passage_id] = label
            passages.append(passage)
    if problems:
        raise CorpusError(problems)
    return passages


def _passage_of(row: Any) -> tuple[Passage | None, list[str]]:
    if not isinstance(row, Mapping):
        return None, ["not a mapping of column -> value"]
    unknown = sorted(set(row) - set(FIELDS))
    problems = [f"unknown column(s) {', '.join(map(str, unknown))}"] if unknown else []
    values = {name: _text(row.get(name)) for name in REQUIRED}
    problems += [f"{name} is missing or empty" for name in REQUIRED if not values[name]]
    for name, most in MAX_FIELD_CHARS.items():
        if len(values[name]) > most:
            problems.append(f"{name} must hold at most {most} characters, not {len(values[name])}")
    for name in ("passage_id", "topic"):
        if values[name] and not SLUG.match(values[name]):
            problems.append(f"{name} {values[name]!r} must be a lowercase slug (a-z, 0-9, _ -)")
    if values["text"] and not MIN_TEXT_CHARS <= len(values["text"]) <= MAX_TEXT_CHARS:
        problems.append(
            f"text must hold {MIN_TEXT_CHARS}-{MAX_TEXT_CHARS} characters, "
            f"not {len(values['text'])}"
        )
    tags, tag_problem = _tags(row.get("tags"))
    if tag_problem:
        problems.append(tag_problem)
    if problems:
        return None, problems
    return Passage(tags=tags, **values), []


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return " ".join(str(value).split())


def _tags(value: Any) -> tuple[tuple[str, ...], str]:
    if value in (None, ""):
        return (), ""
    items = value.split(";") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return (), "tags must be a list or a ';'-separated text"
    tags = tuple(str(item).strip().lower() for item in items if str(item).strip())
    bad = [tag for tag in tags if not SLUG.match(tag)]
    return tags, f"tag(s) {', '.join(bad)} must be slugs" if bad else ""
