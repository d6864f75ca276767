"""Find one element of a rendered page by id: its attributes and its text, for tests."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

VOID_TAGS = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass(frozen=True)
class Region:
    tag: str
    attrs: dict[str, str | None]
    text: str  # the element's text, whitespace collapsed


def region(html: str, element_id: str) -> Region:
    """The element with this id; AssertionError when the page has none."""
    finder = _RegionFinder(element_id)
    finder.feed(html)
    assert finder.tag is not None, f"no element with id {element_id!r}"
    return Region(finder.tag, finder.attrs, " ".join(" ".join(finder.text).split()))


class _RegionFinder(HTMLParser):
    def __init__(self, element_id: str):
        super().__init__()
        self.element_id = element_id
        self.tag: str | None = None
        self.attrs: dict[str, str | None] = {}
        self.text: list[str] = []
        self.depth = 0  # open elements inside the found one, itself included

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in VOID_TAGS
        elif self.tag is None and dict(attrs).get("id") == self.element_id:
            self.tag, self.attrs = tag, dict(attrs)
            self.depth = int(tag not in VOID_TAGS)

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)
