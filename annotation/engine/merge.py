"""Merging a save from a stale tab: which of its changes clash with what was saved since.

A tab sends only the fields it changed, each with the value it started from (what the server
had confirmed to it). Another tab may have saved in between. A field clashes when someone else
changed it too: its saved value is neither the one the tab started from nor the one it sends.
A field the tab sends without saying what it started from clashes as well (nothing tells the
two changes apart). Fields are compared by name, with "no value" as None on every side.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any


def clashing_fields(
    sent: Mapping[Hashable, Any], seen: Mapping[Hashable, Any], saved: Mapping[Hashable, Any]
) -> list[Hashable]:
    """The fields of `sent` that another writer changed since the sender's `seen` values."""
    return [
        name
        for name, value in sent.items()
        if name not in seen or saved.get(name) not in (seen[name], value)
    ]
