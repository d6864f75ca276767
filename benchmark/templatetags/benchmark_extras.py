import json
from decimal import Decimal

from django import template
from django.utils.safestring import mark_safe

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


@register.filter
def per_million(amount) -> str:
    """A price per million tokens without trailing zeros: 1.250000 -> "1.25", 10 -> "10"."""
    return f"{Decimal(amount).normalize():f}"
