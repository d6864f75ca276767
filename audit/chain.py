"""The audit trail's hash chain, in plain Python: each record's hash covers its own fields and
the hash of the record before it, so changing, removing or reordering a stored record breaks
every hash after it. `audit_verify` recomputes the chain and names the first record that does
not match. Used by the data migration that chained the records written before the chain."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

# The previous hash of the first record.
GENESIS = "0" * 64

HASHED_FIELDS = (
    "at",
    "actor_id",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "before",
    "after",
    "note",
)


def record_hash(previous_hash: str, fields: dict) -> str:
    """The SHA-256 of the previous hash and the record's fields as canonical JSON (sorted keys,
    the time in ISO format): the same on SQLite and PostgreSQL, whose JSON columns may give
    keys back in another order."""
    content = {name: fields[name] for name in HASHED_FIELDS}
    at = content["at"]
    content["at"] = at.isoformat() if isinstance(at, datetime) else at
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{previous_hash}\n{text}".encode()).hexdigest()


@dataclass(frozen=True)
class Break:
    """The first record whose stored hashes do not follow from the records before it."""

    record_id: int
    reason: str


def first_break(records: Iterable[dict], head_hash: str) -> Break | None:
    """Walk the records in chain order (dicts with "id", "previous_hash", "hash" and the
    hashed fields). `head_hash` is the last hash the trail recorded: a trail cut short at the
    end breaks there. None when the chain holds."""
    previous = GENESIS
    last_id = None
    for record in records:
        last_id = record["id"]
        if record["previous_hash"] != previous:
            return Break(last_id, "its previous hash is not the hash of the record before it")
        if record["hash"] != record_hash(previous, record):
            return Break(last_id, "its content does not match its hash")
        previous = record["hash"]
    if head_hash != previous:
        return Break(last_id or 0, "the trail's last recorded hash is not this record's")
    return None
