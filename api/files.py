"""Report files as the pages offer them: a figure (SVG, PNG at 300 dpi or PDF) or a table
(CSV, Markdown or LaTeX), each downloaded through the audit trail like the page's. One copy
for every report the API serves (a scoring job's, a study's, a project's trend)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from matplotlib.figure import Figure
from ninja.errors import HttpError

from audit.downloads import download_response
from common.figures import FORMATS as FIGURE_FORMATS
from common.figures import render


def offered(name: str, names: Iterable[str], fmt: str, formats: Iterable[str], noun: str) -> None:
    """404 naming what is offered when `name` or `fmt` is not (as the page's address would)."""
    names, formats = list(names), list(formats)
    if name not in names or fmt not in formats:
        raise HttpError(404, f"{noun}: {', '.join(names)}; formats: {', '.join(formats)}.")


def figure_file(
    request: HttpRequest,
    figure: Figure,
    fmt: str,
    *,
    salt: str,
    filename: str,
    target: Model,
    synthetic: bool = False,
) -> HttpResponse:
    """The figure drawn as `fmt` (its SVG hashed with `salt`, as the page draws it)."""
    return download_response(
        request,
        render(figure, fmt, salt=salt),
        filename=filename,
        content_type=FIGURE_FORMATS[fmt],
        kind="figure",
        target=target,
        synthetic=synthetic,
    )


def table_file(
    request: HttpRequest,
    text: str,
    content_type: str,
    *,
    filename: str,
    target: Model,
    synthetic: bool = False,
) -> HttpResponse:
    return download_response(
        request,
        text,
        filename=filename,
        content_type=f"{content_type}; charset=utf-8",
        kind="table",
        target=target,
        synthetic=synthetic,
    )
