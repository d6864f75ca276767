"""Filters of the annotator's pages: codes in plain words wherever annotators read them
(annotation.engine.plain_words), and the item timer's clock."""

import json

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from annotation.engine import plain_words
from annotation.engine.plain_words import Node

register = template.Library()

register.filter("plain", plain_words.plain)
register.filter("field_name", plain_words.field_name)


@register.filter
def clock(seconds) -> str:
    """Time on an item as the review screen's timer shows it: 4:05, 1:02:09."""
    minutes, secs = divmod(int(seconds or 0), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def readable(value) -> SafeString:
    """A record, a tool's arguments or its JSON answer laid out with plain field names (every
    text escaped); an answer that is not JSON is shown as the text it is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return format_html('<div class="event-text">{}</div>', value)
    return _html(plain_words.readable(value))


def _html(node: Node) -> SafeString:
    if node.kind == "pairs":
        if not node.pairs:
            return format_html('<span class="muted">{}</span>', "nothing")
        pairs = format_html_join(
            "", "<dt>{}</dt><dd>{}</dd>", ((name, _html(v)) for name, v in node.pairs)
        )
        return format_html('<dl class="kv readable">{}</dl>', pairs)
    if node.kind == "table":
        rows = format_html_join("", "<tr>{}</tr>", ((_cells("td", row),) for row in node.rows))
        return format_html(
            '<div class="table-scroll" tabindex="0"><table class="table compact readable">'
            "<thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>",
            _cells("th", node.columns),
            rows,
        )
    if node.kind == "items":
        items = format_html_join("", "<li>{}</li>", ((_html(item),) for item in node.items))
        return format_html('<ol class="readable">{}</ol>', items)
    return format_html("{}", node.text)


def _cells(tag: str, texts) -> SafeString:
    return format_html_join("", f"<{tag}>{{}}</{tag}>", ((text,) for text in texts))
