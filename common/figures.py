"""Figures for pages and papers, drawn with matplotlib (Agg, no pyplot state): one way to
render a figure as inline SVG or as a download (SVG, PNG at 300 dpi, PDF), used by every report
that offers figures (alignment, jury).

Text stays text in SVG (svg.fonttype "none"): small files, searchable, and fonts resolved by
the reader; PNG and PDF embed the glyphs. Each SVG gets its own hash salt so the clip-path ids
of several figures inline on one page never collide. No file holds a date, so a figure drawn
twice from the same data is the same file, byte for byte.
"""

from __future__ import annotations

import io
import logging
import re

import matplotlib

matplotlib.use("Agg")
# PDF font subsetting logs every table it touches at INFO.
logging.getLogger("fontTools").setLevel(logging.WARNING)

from matplotlib.axes import Axes  # noqa: E402 - after choosing the backend
from matplotlib.figure import Figure  # noqa: E402

FORMATS = {"svg": "image/svg+xml", "png": "image/png", "pdf": "application/pdf"}
# PNG is for print: 300 dpi (journals ask for 300 or more), stored in the file's pHYs chunk.
# SVG and PDF are vector; their dpi only sizes an embedded raster (a heat map).
DPI = {"png": 300, "svg": 150, "pdf": 150}
PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#57606a")
STYLE = {
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,  # TrueType glyphs embedded, editable in a paper's figure tools
}
# Matplotlib writes the time of drawing into SVG and PDF files unless told not to.
UNDATED = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


def new_figure(
    width: float, height: float, *, panels: int = 1, stacked: bool = False, **grid
) -> tuple[Figure, list[Axes]]:
    """A figure of `width` x `height` inches in the house style, with `panels` side by side
    (or one above the other when `stacked`); `grid` goes to `Figure.subplots`."""
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        shape = (panels, 1) if stacked else (1, panels)
        axes = figure.subplots(*shape, squeeze=False, **grid)
    return figure, list(axes.ravel())


def render(figure: Figure, fmt: str, *, salt: str) -> bytes:
    """The figure as SVG (text as text, no XML prolog), PNG (300 dpi) or PDF."""
    if fmt not in FORMATS:
        raise ValueError(f"figure format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE | {"svg.hashsalt": salt}):
        figure.savefig(buffer, format=fmt, dpi=DPI[fmt], metadata=UNDATED.get(fmt))
    data = buffer.getvalue()
    if fmt == "svg":
        data = _bare_svg(data.decode()).encode()
    return data


def inline_svg(figure: Figure, *, salt: str) -> str:
    """SVG markup for a page: scales with its container. Every label in it comes from our own
    data and matplotlib escapes text it writes, so the markup can be embedded as is."""
    markup = render(figure, "svg", salt=salt).decode()
    return re.sub(
        r'<svg([^>]*?) width="[^"]+" height="[^"]+"',
        r'<svg\1 style="width:100%;max-width:36rem;height:auto"',
        markup,
        count=1,
    )


def _bare_svg(markup: str) -> str:
    return markup[markup.index("<svg") :]
