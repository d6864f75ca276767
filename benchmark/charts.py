"""Small server-side SVG charts (no JavaScript, no CDN). Pure functions returning markup.

Every label is escaped; the output is marked safe by the template filter that embeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

ROW = 18
LABEL_WIDTH = 210
BAR_WIDTH = 360
# Between the end of an interval chart's axis and its value labels: intervals stop at the axis.
LABEL_GAP = 16
CLIP_MARK = 6  # length of the arrowhead that marks an interval cut at the axis
TARGET_COLOUR = "#9aa6b8"
REALISED_COLOUR = "#1f6feb"
BAND_COLOUR = "#dbe7ff"
FLAG_COLOUR = "#cf222e"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", colour: str = "") -> str:
    fill = f' fill="{colour}"' if colour else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{fill}>{escape(str(text))}</text>'


def paired_bars(rows: Sequence[tuple[str, float, float]], *, title: str) -> str:
    """Horizontal bars: grey = target share, blue = realised share, one row per value."""
    scale = max([max(t, r) for _, t, r in rows] + [1e-9])
    body = [_text(LABEL_WIDTH, 12, "grey: target · blue: realised", colour="#5d6878")]
    for i, (label, target, realised) in enumerate(rows):
        y = 20 + i * ROW
        body.append(_text(LABEL_WIDTH - 6, y + 12, _clip(label), anchor="end"))
        body.append(_rect(LABEL_WIDTH, y + 2, BAR_WIDTH * target / scale, 6, TARGET_COLOUR))
        body.append(_rect(LABEL_WIDTH, y + 8, BAR_WIDTH * realised / scale, 7, REALISED_COLOUR))
        body.append(
            _text(
                LABEL_WIDTH + BAR_WIDTH + 6, y + 13, f"{100 * realised:.1f}% / {100 * target:.1f}%"
            )
        )
    return _svg(LABEL_WIDTH + BAR_WIDTH + 110, 26 + len(rows) * ROW, body, title)


def _rect(x: float, y: float, width: float, height: float, colour: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 0):.1f}" height="{height:.1f}" '
        f'fill="{colour}" rx="1"/>'
    )


def _clip(label: str, limit: int = 34) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


@dataclass(frozen=True)
class Interval:
    label: str
    mean: float
    low: float
    high: float
    flagged: bool = False
    note: str = ""


def interval_rows(
    rows: Sequence[Interval], *, band: tuple[float, float], domain: tuple[float, float], title: str
) -> str:
    """Subgroup means with 95% CIs drawn against a shaded overall band; flagged rows in red.

    Everything is drawn within the axis (`domain`, the same for every chart meant to be read
    side by side): an interval reaching past it is cut at the axis end, marked there with an
    arrowhead, and the value labels start LABEL_GAP further right."""
    low_d, high_d = domain
    span = high_d - low_d or 1.0
    axis_end = LABEL_WIDTH + BAR_WIDTH

    def x(value: float) -> float:
        return LABEL_WIDTH + BAR_WIDTH * (min(max(value, low_d), high_d) - low_d) / span

    height = 24 + len(rows) * ROW
    body = [_rect(x(band[0]), 0, x(band[1]) - x(band[0]), height - 14, BAND_COLOUR)]
    for tick in _ticks(low_d, high_d):
        body.append(_text(x(tick), height - 2, f"{tick:g}", "middle", "#5d6878"))
    for i, row in enumerate(rows):
        y = 8 + i * ROW
        colour = FLAG_COLOUR if row.flagged else REALISED_COLOUR
        body.append(_text(LABEL_WIDTH - 6, y + 9, _clip(row.label), "end", colour))
        body.append(
            f'<line class="interval" x1="{x(row.low):.1f}" y1="{y + 5}" x2="{x(row.high):.1f}" '
            f'y2="{y + 5}" stroke="{colour}" stroke-width="2"/>'
        )
        if row.low < low_d:
            body.append(_clip_mark(LABEL_WIDTH, y + 5, pointing=-1, colour=colour))
        if row.high > high_d:
            body.append(_clip_mark(axis_end, y + 5, pointing=1, colour=colour))
        body.append(f'<circle cx="{x(row.mean):.1f}" cy="{y + 5}" r="3.5" fill="{colour}"/>')
        note = row.note or f"{row.mean:.2f}"
        body.append(_text(axis_end + LABEL_GAP, y + 9, note))
    return _svg(axis_end + LABEL_GAP + 90, height, body, title)


def _clip_mark(tip: float, y: float, *, pointing: int, colour: str) -> str:
    """An arrowhead inside the axis whose tip sits on the axis end: the interval goes on."""
    base = tip - pointing * CLIP_MARK
    points = f"{base:.1f},{y - 4:.1f} {tip:.1f},{y:.1f} {base:.1f},{y + 4:.1f}"
    return (
        f'<polygon class="clipped" points="{points}" fill="{colour}">'
        "<title>the interval goes on past the axis</title></polygon>"
    )


def _ticks(low: float, high: float) -> list[float]:
    step = 1.0 if high - low >= 2 else 0.25
    ticks, value = [], low
    while value <= high + 1e-9:
        ticks.append(round(value, 2))
        value += step
    return ticks
