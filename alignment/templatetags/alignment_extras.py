"""Agreement figures on pages: value, interval and n together; undefined figures with why."""

from django import template
from django.utils.html import format_html

from alignment.services.formats import interval_text, value_text

register = template.Library()


@register.filter
def estimate(figure, fmt: str = "number"):
    """`{{ agreement.jury_adjacent|estimate:"share" }}`: the value, its 95% interval and the
    conversations / ratings it rests on; an undefined figure shows its reason instead."""
    if figure is None:
        return ""
    if figure.value is None:
        return format_html(
            '<span class="undefined muted">undefined<span class="small">: {}</span></span>',
            figure.undefined or "not computed",
        )
    return format_html(
        '<span class="value">{}</span> <span class="ci">{}</span>'
        ' <span class="ci" title="conversations / ratings">n={}/{}</span>',
        value_text(figure.value, fmt),
        interval_text(figure, fmt),
        figure.n_items,
        figure.n_ratings,
    )


@register.filter
def figure_value(value, fmt: str = "number") -> str:
    """A bare number in the figure formats (share, signed, number)."""
    return value_text(None if value is None else float(value), fmt)


@register.filter
def get(mapping, key):
    """mapping[key] in a template, or None."""
    return mapping.get(key) if mapping else None


@register.filter
def half_share(width) -> str:
    """Half an interval width as percentage points: 0.15 -> "7.5 points"."""
    return f"{100 * float(width) / 2:g} points"


@register.filter
def section(report, rubric_id):
    """The report's section of one rubric, or None when the round does not have it."""
    return report.section(rubric_id)


@register.filter
def figure(result, name: str):
    """A figure of an agreement result by field name (`{{ s.weighted|figure:"icc" }}`); None
    when there is no result (no population weights)."""
    return None if result is None else getattr(result, name, None)


@register.filter
def corrected(estimate, fmt: str = "number"):
    """A clinician-corrected (or jury-only) figure with its interval (and the interval's note):
    pass rates with one decimal; an undefined one with its reason."""
    if estimate is None:
        return ""
    if estimate.value is None:
        return format_html(
            '<span class="undefined muted">undefined<span class="small">: {}</span></span>',
            estimate.undefined or "not computed",
        )
    return format_html(
        '<span class="value">{}</span> <span class="ci">{}</span>',
        value_text(estimate.value, fmt, fine=True),
        interval_text(estimate, fmt, fine=True),
    )


@register.filter
def index(sequence, position: int):
    """sequence[position] in a template (the weighted twin of a row), or None."""
    try:
        return sequence[int(position)]
    except (IndexError, TypeError, ValueError):
        return None


@register.filter
def p_value(value) -> str:
    """A p-value as the tables print it: three decimals, "<0.001" below."""
    if value is None:
        return ""
    return "<0.001" if value < 0.001 else f"{value:.3f}"


@register.simple_tag
def toggled_query(params, name: str, value: str = "1") -> str:
    """`params` (a QueryDict) as a query string with the flag `name` switched: set to `value`
    when absent, removed when present; the other filters kept, so a toggle link keeps them."""
    query = params.copy()
    if name in query:
        del query[name]
    else:
        query[name] = value
    return query.urlencode()


@register.filter
def learned_note(comparison, configuration) -> str:
    """What the jury comparison says of a configuration whose jury learned from the study."""
    return comparison.learned_note(configuration)
