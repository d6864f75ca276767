"""The pages' warning when the queue cannot be reached, for the API's answers."""

from __future__ import annotations

from jobs.services.queue import held_work_message


def held(what: str) -> str:
    """The page's warning when the queue cannot be reached ("" when it can)."""
    return held_work_message(what) or ""
