"""The kinds of patient-simulator error the fidelity reviewer reports, from
fidelity/data/error_kinds.yaml: loaded and validated in one place."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

KINDS_FILE = Path(__file__).resolve().parents[1] / "data" / "error_kinds.yaml"


class KindsError(ValueError):
    """The error kinds file is malformed."""


@dataclass(frozen=True)
class ErrorKind:
    id: str
    label: str
    description: str


def parse_kinds(text: str) -> tuple[ErrorKind, ...]:
    data = yaml.safe_load(text) or {}
    entries = data.get("kinds") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise KindsError("error kinds: 'kinds' must be a non-empty list")
    kinds = []
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(key), str) and entry[key].strip()
            for key in ("id", "label", "description")
        ):
            raise KindsError(f"error kind {position}: needs a non-empty id, label and description")
        kinds.append(ErrorKind(entry["id"].strip(), entry["label"].strip(), entry["description"]))
    ids = [kind.id for kind in kinds]
    if len(set(ids)) != len(ids):
        raise KindsError(f"error kinds: an id is used twice in {ids}")
    return tuple(kinds)


@lru_cache(maxsize=1)
def default_kinds() -> tuple[ErrorKind, ...]:
    return parse_kinds(KINDS_FILE.read_text(encoding="utf-8"))


def kind_labels(kinds: tuple[ErrorKind, ...] | None = None) -> dict[str, str]:
    return {kind.id: kind.label for kind in kinds or default_kinds()}
