"""Starting a job: how a view, a command, the API or another service sends a job's work to
the workers without knowing its tasks.

Each kind of job declares its start in its app's tasks module (`jobs.tasks.job_kind`, or
`jobs.tasks.leased_job_tasks` for a job of leased units), which runs when the app is ready.
Services call `job_start(job)`; the tasks import the services, so the arrows run one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models

_STARTS: dict[type[models.Model], Callable[[Any], Any]] = {}


def start_register(model: type[models.Model], start: Callable[[Any], Any]) -> None:
    _STARTS[model] = start


def job_start(job: models.Model) -> Any:
    """Send the job's work (the first window, or what a resumed job has left) and start its
    watch; what the kind's start returns."""
    try:
        start = _STARTS[type(job)]
    except KeyError:
        raise LookupError(f"No start declared for {type(job).__name__} (jobs.tasks)") from None
    return start(job)
