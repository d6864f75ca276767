"""Number formats of the researcher's study pages."""

from django import template

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """Seconds on task as "4 min 05 s" (or "-" when there is nothing to show)."""
    if seconds is None:
        return "-"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


@register.filter
def signed(value, digits: int = 2) -> str:
    """A difference with its sign (+0.50, -1.25); "-" when there is none."""
    if value is None:
        return "-"
    return f"{value:+.{int(digits)}f}"


@register.filter
def lookup(mapping, key):
    """mapping[key] in a template (rubric names, item numbers), or the key itself."""
    return mapping.get(key, key)
