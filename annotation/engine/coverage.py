"""The study page's view of what the stratified sampler achieved: a table and a heat map.

Input is the coverage JSON `study_create` stores (models, rubrics, wanted_per_cell, cells with
available / sampled / expected counts, the design's strata, shortfalls). Pure functions; the
heat map is SVG markup with every label escaped, so the template may embed it as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from annotation.engine.sampling import BINS

CELL = 26
LABEL_WIDTH = 44
HEADER = 30
EMPTY_COLOUR = "#f3f4f6"
SHORTFALL_COLOUR = "#cf222e"
PALE, DEEP = (219, 231, 255), (31, 111, 235)


@dataclass(frozen=True)
class CoverageCell:
    bin: int
    available: int
    sampled: int
    short: bool
    expected: float | None = None  # the sum of its conversations' chances (exact designs)


@dataclass(frozen=True)
class StratumRow:
    key: str
    cells: int  # home cells it holds: one, or the common cells pooled
    size: int  # N_h
    drawn: int  # n_h

    @property
    def probability(self) -> float:
        return self.drawn / self.size


@dataclass(frozen=True)
class CoverageRow:
    model: str
    rubric: str
    rubric_label: str
    cells: tuple[CoverageCell, ...]


def coverage_rows(coverage: Mapping, labels: Mapping[str, str]) -> list[CoverageRow]:
    """One row per (model, rubric) with its five bins, in the sampler's order."""
    wanted = coverage.get("wanted_per_cell", 1)
    by_key = {(c["model"], c["rubric"], c["bin"]): c for c in coverage.get("cells", [])}
    rows = []
    for model in coverage.get("models", []):
        for rubric in coverage.get("rubrics", []):
            cells = []
            for bin_ in BINS:
                cell = by_key.get((model, rubric, bin_), {"available": 0, "sampled": 0})
                short = cell["sampled"] < wanted
                cells.append(
                    CoverageCell(
                        bin_, cell["available"], cell["sampled"], short, cell.get("expected")
                    )
                )
            rows.append(CoverageRow(model, rubric, labels.get(rubric, rubric), tuple(cells)))
    return rows


def strata_rows(coverage: Mapping) -> list[StratumRow]:
    """The design's strata in the sampler's order (none for a study drawn before it)."""
    strata = (coverage.get("design") or {}).get("strata", [])
    return [StratumRow(s["key"], len(s["cells"]), s["size"], s["drawn"]) for s in strata]


def shortfall_sentences(coverage: Mapping, labels: Mapping[str, str]) -> list[str]:
    """The strata that got fewer conversations than wanted, named in words: first those that
    had some (the sample could not take more), then those with none scored at all."""
    shortfalls = sorted(coverage.get("shortfalls", []), key=lambda s: s["available"] == 0)
    return [
        f"{s['model']} · {labels.get(s['rubric'], s['rubric'])} · jury score {s['bin']}: "
        f"{s['sampled']} of {s['wanted']} wanted "
        f"({_available_words(s['available'])})"
        for s in shortfalls
    ]


def _available_words(available: int) -> str:
    if available == 0:
        return "no conversation scored there"
    return f"only {available} scored there" if available == 1 else f"{available} scored there"


def coverage_heatmaps(coverage: Mapping, codes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(model, SVG) per model: rubric x score-bin grid, shaded by sampled count (one scale for
    every model, so grids compare), shortfall cells outlined in red."""
    rows = coverage_rows(coverage, codes)
    peak = max((cell.sampled for row in rows for cell in row.cells), default=0)
    return [
        (model, _grid(model, [row for row in rows if row.model == model], peak))
        for model in coverage.get("models", [])
    ]


def _grid(model: str, rows: list[CoverageRow], peak: int) -> str:
    width = LABEL_WIDTH + CELL * len(BINS) + 4
    height = HEADER + CELL * len(rows) + 4
    body = [
        _text(LABEL_WIDTH + CELL * i + CELL / 2, HEADER - 8, str(b), "middle")
        for i, b in enumerate(BINS)
    ]
    for r, row in enumerate(rows):
        y = HEADER + r * CELL
        body.append(_text(LABEL_WIDTH - 6, y + CELL / 2 + 4, row.rubric_label, "end"))
        for i, cell in enumerate(row.cells):
            body.append(_cell(LABEL_WIDTH + i * CELL, y, cell, peak, row.rubric_label))
    title = f"Sampled conversations per rubric and jury score: {model}"
    return (
        f'<svg class="chart heatmap" role="img" aria-label="{escape(title)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _cell(x: float, y: float, cell: CoverageCell, peak: int, label: str) -> str:
    fill = _shade(cell.sampled, peak)
    stroke = f'stroke="{SHORTFALL_COLOUR}" stroke-width="2"' if cell.short else 'stroke="#ffffff"'
    ink = "#ffffff" if peak and cell.sampled / peak > 0.55 else "#1f2328"
    tip = f"{label}, score {cell.bin}: {cell.sampled} sampled of {cell.available} available"
    if cell.short:
        tip += " (shortfall)"
    return (
        f'<g class="{"short" if cell.short else "met"}"><title>{escape(tip)}</title>'
        f'<rect x="{x + 1:.0f}" y="{y + 1:.0f}" width="{CELL - 2}" height="{CELL - 2}" '
        f'fill="{fill}" {stroke}/>'
        + _text(x + CELL / 2, y + CELL / 2 + 4, str(cell.sampled), "middle", ink)
        + "</g>"
    )


def _shade(sampled: int, peak: int) -> str:
    """White-to-blue by share of the busiest cell; grey for an empty cell."""
    if not sampled or not peak:
        return EMPTY_COLOUR
    share = sampled / peak
    red, green, blue = (round(a + share * (b - a)) for a, b in zip(PALE, DEEP, strict=True))
    return f"#{red:02x}{green:02x}{blue:02x}"


def _text(x: float, y: float, text: str, anchor: str, colour: str = "") -> str:
    fill = f' fill="{colour}"' if colour else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="11"{fill}>'
        f"{escape(text)}</text>"
    )
