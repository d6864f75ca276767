import json
from datetime import datetime
from decimal import Decimal

from django import template
from django.utils.safestring import mark_safe

from jobs.services import worker_heartbeats
from llm.engine.generation import model_label as settings_label

register = template.Library()


@register.simple_tag
def percent(part, total) -> str:
    """Width of a progress segment, as a number for a CSS percentage."""
    if not total:
        return "0"
    return f"{100 * (part or 0) / total:.2f}"


@register.filter
def svg(markup: str):
    """Embed a chart from benchmark.charts (which escapes every label itself)."""
    return mark_safe(markup)  # noqa: S308 - charts escape their text


@register.filter
def pretty_json(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def make_list_words(value: str) -> list[str]:
    return value.split()


# Statuses of a job or a unit whose work still waits to be played.
WAITING_STATUSES = {"running", "pending", "queued"}


@register.simple_tag
def worker_health(waiting=False, status=None, job=None) -> worker_heartbeats.WorkerHealth:
    """`{% worker_health waiting=... as workers %}` (or `status=job.status`; `job=` for a job
    an inline command may play), then include benchmark/_worker_status.html: every job page's
    progress region says the same thing about the workers."""
    if status is not None:
        waiting = status in WAITING_STATUSES
    return worker_heartbeats.worker_health(waiting=bool(waiting), job=job)


@register.filter
def ago(moment: datetime | None) -> str:
    """'12 s ago', '5 min ago' (live regions poll every 2 s)."""
    return worker_heartbeats.ago(moment)


@register.filter
def per_million(amount) -> str:
    """A price per million tokens without trailing zeros: 1.250000 -> "1.25", 10 -> "10"."""
    return f"{Decimal(amount).normalize():f}"


@register.filter
def model_label(model: str) -> str:
    """A model string with its generation settings in words: "openai/gpt-5.5, effort high"."""
    return settings_label(model or "")
