"""The annotation exchange format: one row per assignment x rubric, as CSV or JSONL.

Writing: `write_csv` / `to_jsonl` from row dicts in `COLUMNS` order. Reading: `read_upload` turns
the bytes of an uploaded file into typed `ImportRow`s and the problems of each line (CSV lines
are counted as a spreadsheet counts rows: the header is line 1). A row with a problem is still
returned, with the cells that could not be read named in `unreadable`, so the service can check
the rest of it against the study in the same pass: every problem of the file is listed at
once. It checks only what the file itself can show; whether a conversation, rubric or person
fits the study is the service's business. Pure: no Django.

CSV cells pass through common.csv_export: formula-like text is neutralised on
writing and restored on reading, so a file exported here reads back as it was written.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from common import json_text
from common.csv_export import restore_cell, rows_csv
from common.text_files import NotText, decode_text

COLUMNS = (
    "study",
    "project",
    "kind",
    "round",
    "conversation",
    "assignment",
    "annotator",
    "track",
    "licensed",
    "practice",
    "synthetic",
    "imported",
    "rubric_id",
    "rubric_version",
    "score",
    "feedback",
    "event_ids",
    "overall_comment",
    "submitted_at",
    "seconds_on_task",
    "invalidated",
    "invalidated_reason",
)
COLUMN_KINDS = {  # columns that are not text, for typed formats (Parquet)
    "round": "int",
    "licensed": "bool",
    "practice": "bool",
    "synthetic": "bool",
    "imported": "bool",
    "rubric_version": "int",
    "score": "int",
    "event_ids": "json",
    "seconds_on_task": "int",
    "invalidated": "bool",
}
REQUIRED = ("conversation", "annotator", "track", "rubric_id", "score")
# A line starting with this before the header is a comment (no column name starts with it).
COMMENT = "#"
SYNTHETIC_NOTE = (
    "Includes the work of synthetic clinicians (scripted simulated clinicians, not people): "
    "see the column synthetic."
)
TRUE_WORDS, FALSE_WORDS = {"true", "1", "yes", "y"}, {"false", "0", "no", "n", ""}
TEXT_LIMIT = 5000


@dataclass(frozen=True)
class ImportRow:
    line: int
    conversation: str
    annotator: str
    track: str
    rubric_id: str
    score: int
    rubric_version: int | None = None
    feedback: str = ""
    event_ids: tuple[str, ...] = ()
    overall_comment: str = ""
    submitted_at: datetime | None = None
    seconds_on_task: int = 0
    licensed: bool | None = None
    synthetic: bool = False
    invalidated: bool = False
    invalidated_reason: str = ""
    # Cells that could not be read (their problem is named): their value here is a placeholder.
    unreadable: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Upload:
    rows: list[ImportRow]
    problems: list[tuple[int, str]]  # (line, problem), in line order


# --- writing -----------------------------------------------------------------------------------


def write_csv(rows: Iterable[Mapping], *, note: str = "") -> str:
    """The rows as CSV; a `note` goes first, as a COMMENT line the import skips."""
    text = rows_csv(
        ([_csv_cell(row.get(name)) for name in COLUMNS] for row in rows), header=COLUMNS
    )
    return f"{COMMENT} {note}\r\n{text}" if note else text


def _csv_cell(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return " ".join(value)
    return "" if value is None else value


def to_jsonl(rows: Iterable[Mapping]) -> str:
    return "".join(
        json.dumps({name: row.get(name) for name in COLUMNS}, ensure_ascii=False) + "\n"
        for row in rows
    )


def pseudonyms(names: Iterable[str]) -> dict[str, str]:
    """A01, A02, ... in sorted order of the real names: the same person gets the same
    pseudonym everywhere in one export."""
    ordered = sorted(set(names))
    width = max(2, len(str(len(ordered))))
    return {name: f"A{number:0{width}d}" for number, name in enumerate(ordered, start=1)}


# --- reading -----------------------------------------------------------------------------------


class UploadError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def read_upload(data: bytes, filename: str) -> Upload:
    """Every row of the file, typed, with the problems of each line; raises UploadError only
    when the file as a whole cannot be read (not text, a missing column, no rows)."""
    text = _as_text(data)
    raw_rows = _jsonl_rows(text) if _is_jsonl(text, filename) else _csv_rows(text)
    rows, problems = [], []
    for line, raw in raw_rows:
        if isinstance(raw, str):
            problems.append((line, raw))
            continue
        row, errors = read_row(line, raw)
        problems += [(line, error) for error in errors]
        rows.append(row)
    if not problems and not rows:
        raise UploadError(["the file holds no annotation rows"])
    return Upload(rows, problems)


def _as_text(data: bytes) -> str:
    try:
        return decode_text(data)
    except NotText as refused:
        if refused.binary:
            raise UploadError(["the file is not text: upload a CSV or JSONL file"]) from None
        raise UploadError(
            [f"line {refused.line}: the file is not UTF-8 text (save it as UTF-8 CSV)"]
        ) from None


def _is_jsonl(text: str, filename: str) -> bool:
    suffix = filename.lower().rsplit(".", 1)[-1] if "." in filename else ""
    if suffix in {"jsonl", "ndjson", "json"}:
        return True
    if suffix == "csv":
        return False
    return text.lstrip().startswith("{")


def _csv_rows(text: str) -> list[tuple[int, dict | str]]:
    comments = _leading_comments(text)
    stream = io.StringIO(text, newline="")
    for _ in range(comments):
        stream.readline()
    reader = csv.DictReader(stream)
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise UploadError([f"line {comments + 1}: missing column(s) {', '.join(missing)}"])
    reader.fieldnames = header
    rows = []
    try:
        for raw in reader:
            if None in raw:
                rows.append((comments + reader.line_num, "more cells than the header has columns"))
            elif any((value or "").strip() for value in raw.values()):
                rows.append((comments + reader.line_num, _restored(raw)))
    except csv.Error as error:
        rows.append((comments + reader.line_num, f"not readable as CSV ({error})"))
    return rows


def _leading_comments(text: str) -> int:
    """How many lines before the header are COMMENT lines (the export's synthetic note)."""
    count = 0
    for line in io.StringIO(text, newline=""):
        if not line.startswith(COMMENT):
            break
        count += 1
    return count


def _restored(raw: dict) -> dict:
    # A file this site exported carries its formula-like text neutralised; read it back as
    # it was written.
    return {name: restore_cell(value) if value else value for name, value in raw.items()}


def _jsonl_rows(text: str) -> list[tuple[int, dict | str]]:
    rows = []
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            value = json_text.loads(content)
        except json.JSONDecodeError as error:
            rows.append((line, f"not valid JSON ({error.msg}, column {error.colno})"))
            continue
        if not isinstance(value, dict):
            rows.append((line, "each line must be one JSON object"))
        else:
            rows.append((line, value))
    return rows


def read_row(line: int, raw: Mapping) -> tuple[ImportRow, list[str]]:
    """Type one row's cells (strings from CSV, JSON values from JSONL); errors in words, and
    the row with every cell that could be read (the others named in `unreadable`)."""
    problems: list[tuple[str, str]] = []  # (cell, problem)

    def cell(name: str, read):
        found: list[str] = []
        value = read(raw.get(name), found)
        problems.extend((name, text) for text in found)
        return value

    problems += [(name, f"missing {name}") for name in REQUIRED if name not in raw]
    fields = {name: _text(raw.get(name)) for name in REQUIRED if name != "score"}
    problems += [
        (name, f"{name} is empty") for name, value in fields.items() if name in raw and not value
    ]
    values = {
        "score": cell("score", _score) if "score" in raw else 0,
        "rubric_version": cell("rubric_version", lambda v, e: _integer(v, "rubric_version", e)),
        "seconds_on_task": cell(
            "seconds_on_task", lambda v, e: _integer(v, "seconds_on_task", e) or 0
        ),
        "event_ids": cell("event_ids", _event_ids),
        "submitted_at": cell("submitted_at", _moment),
        "licensed": cell("licensed", lambda v, e: _flag(v, "licensed", e, unset=None)),
        "synthetic": cell("synthetic", lambda v, e: _flag(v, "synthetic", e, unset=False)),
        "invalidated": cell("invalidated", lambda v, e: _flag(v, "invalidated", e, unset=False)),
    }
    texts = {
        name: _text(raw.get(name)) for name in ("feedback", "overall_comment", "invalidated_reason")
    }
    for name, value in texts.items():
        if len(value) > TEXT_LIMIT:
            problems.append((name, f"{name} is longer than {TEXT_LIMIT} characters"))
    unreadable = frozenset(name for name, _ in problems)
    row = ImportRow(line=line, **fields, **values, **texts, unreadable=unreadable)
    return row, [text for _, text in problems]


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _score(value, errors: list[str]) -> int:
    number = _integer(value, "score", errors, required=True)
    if number is not None and not 1 <= number <= 5:
        errors.append(f"score {number} is out of range: a score is a whole number from 1 to 5")
    return number or 0


def _integer(value, name: str, errors: list[str], *, required: bool = False) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            errors.append(f"{name} is empty")
        return None
    if isinstance(value, bool):
        errors.append(f"{name} must be a whole number, not {value!r}")
        return None
    try:
        number = float(value) if isinstance(value, str) else value
        if not isinstance(number, int | float) or number != int(number):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        errors.append(f"{name} must be a whole number, not {value!r}")
        return None
    if number < 0:
        errors.append(f"{name} must not be negative")
        return None
    return int(number)


def _event_ids(value, errors: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part for part in value.replace(",", " ").replace(";", " ").split() if part)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    errors.append("event_ids must be a list of trace event ids (e.g. e0004)")
    return ()


def _moment(value, errors: list[str]) -> datetime | None:
    text = _text(value)
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        errors.append(f"submitted_at {text!r} is not an ISO date and time (2026-11-30T14:05:00Z)")
        return None
    return moment


def _flag(value, name: str, errors: list[str], *, unset):
    if value is None or (isinstance(value, str) and not value.strip()):
        return unset
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    errors.append(f"{name} must be true or false, not {value!r}")
    return unset
