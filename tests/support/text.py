"""Page text as a reader sees it: templates break long lines at spaces, and HTML shows any run of
whitespace as one space, so tests look for phrases in squashed text rather than in raw markup."""

import re

WHITESPACE_RUN = re.compile(r"\s+")


def squashed(page) -> str:
    """The page's markup (str, bytes or a response) with every run of whitespace made one space."""
    if hasattr(page, "content"):
        page = page.content
    if isinstance(page, bytes):
        page = page.decode("utf-8")
    return WHITESPACE_RUN.sub(" ", page)
