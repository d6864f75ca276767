"""The alignment figures, drawn with matplotlib (Agg, no pyplot state) for pages and papers.

- scatter: jury mean (y) against the mean clinician score (x) per conversation, with the
  diagonal and the +/-1 band of adjacent agreement; points below the diagonal are conversations
  the jury scored lower (stricter) than the clinicians. A light, seeded jitter separates points
  that share a position; every point links to its conversation in the inline SVG.
- bias (Bland-Altman): jury - clinician mean against their average, with the mean difference
  and its 95% limits of agreement (mean +/- 1.96 sd).
- confusion: counts of (clinician mean rounded, jury mean rounded), halves up.
- trend: adjacent agreement and major disagreements per round of a project.
- learning curve: a calibrated variant's held-out adjacent agreement and mean absolute
  difference against the number of clinician-scored conversations it learned from, per rubric.
- versions: adjacent agreement per rubric across the versions of a jury (its history).

Rendering (inline SVG, and SVG / PNG / PDF downloads) is common.figures, shared with the
jury report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from common.figures import FORMATS, PALETTE, inline_svg, new_figure, render
from jury.engine.score_gaps import ADJACENT_POINTS, MAJOR_POINTS

# The alignment views render through this module, with the shared mechanism.
__all__ = [
    "FORMATS",
    "bias_figure",
    "confusion_figure",
    "in_study_order",
    "inline_svg",
    "learning_curve_figure",
    "render",
    "scatter_figure",
    "trend_figure",
    "versions_figure",
]

LEVELS = np.arange(1, 6)
JITTER = 0.06
ORDER = "order"  # a point's place in a fixed order of the study's conversations
NO_DATA = "no conversation with both a jury and a clinician score yet"


def scatter_figure(
    points: pd.DataFrame, *, title: str, links: Sequence[str] | None = None, seed: int = 0
) -> Figure:
    """`points`: clinician_mean, jury and model per conversation, and optionally ORDER (see
    `in_study_order`), which fixes each point's jitter."""
    figure, axes = _figure(5.0, 4.4)
    edge = np.array([0.5, 5.5])
    band = ADJACENT_POINTS
    axes.fill_between(
        edge, edge - band, edge + band, color="#d8e6f7", alpha=0.6, lw=0, label=f"±{band}"
    )
    axes.plot(edge, edge, color="#57606a", lw=1, ls="--", label="jury = clinicians")
    x_jitter, y_jitter = _jitter(points, seed)
    x = points["clinician_mean"].to_numpy(float) + x_jitter
    y = points["jury"].to_numpy(float) + y_jitter
    for colour, (model, rows) in zip(PALETTE * 10, _by_model(points), strict=False):
        dots = axes.scatter(
            x[rows], y[rows], s=26, color=colour, alpha=0.8, edgecolors="white", label=model
        )
        if links is not None:
            dots.set_urls([links[i] for i in rows])
    _score_axes(axes, "mean clinician score", "jury mean score")
    axes.text(5.4, 0.65, "below the diagonal: jury stricter", ha="right", fontsize=7.5)
    _note_if_empty(axes, points)
    axes.set_title(title, loc="left", fontsize=10)
    axes.legend(loc="upper left", fontsize=7, frameon=False)
    return figure


def bias_figure(points: pd.DataFrame, *, title: str) -> Figure:
    figure, axes = _figure(5.0, 3.6)
    clinician, jury = points["clinician_mean"].to_numpy(float), points["jury"].to_numpy(float)
    average, difference = (clinician + jury) / 2, jury - clinician
    axes.axhline(0, color="#57606a", lw=1)
    # The adjacent-agreement band, as on the scatter: points inside it count as agreeing.
    band = ADJACENT_POINTS
    axes.axhspan(-band, band, color="#d8e6f7", alpha=0.6, lw=0, label=f"±{band} (adjacent)")
    axes.scatter(average, difference, s=22, color=PALETTE[0], alpha=0.75, edgecolors="white")
    if len(difference) >= 2:
        mean, sd = difference.mean(), difference.std(ddof=1)
        axes.axhline(mean, color=PALETTE[1], lw=1.2, label=f"mean {mean:+.2f}")
        for limit in (mean - 1.96 * sd, mean + 1.96 * sd):
            axes.axhline(limit, color=PALETTE[1], lw=0.8, ls=":")
        axes.plot([], [], color=PALETTE[1], lw=0.8, ls=":", label="mean ± 1.96 sd")
        axes.legend(loc="upper right", fontsize=7, frameon=False)
    _note_if_empty(axes, points)
    axes.set_xlim(0.8, 5.2)
    axes.set_ylim(-4.2, 4.2)
    axes.set_xlabel("average of jury and mean clinician")
    axes.set_ylabel("jury − mean clinician")
    axes.set_title(title, loc="left", fontsize=10)
    return figure


def confusion_figure(matrix: Sequence[Sequence[int]], *, title: str) -> Figure:
    """Rows: clinician mean rounded 1-5; columns: jury mean rounded 1-5."""
    counts = np.zeros((5, 5), dtype=int) if not len(matrix) else np.asarray(matrix, dtype=int)
    figure, axes = _figure(4.2, 3.9)
    axes.imshow(counts, cmap="Blues", origin="lower", vmin=0, vmax=max(1, counts.max()))
    for row, column in np.ndindex(counts.shape):
        dark = counts[row, column] > counts.max() * 0.6
        axes.text(
            column,
            row,
            str(counts[row, column]),
            ha="center",
            va="center",
            color="white" if dark else "#1f2328",
            fontsize=8,
        )
    axes.set_xticks(range(5), LEVELS)
    axes.set_yticks(range(5), LEVELS)
    axes.set_xlabel("jury (mean rounded, halves up)")
    axes.set_ylabel("clinicians (mean rounded)")
    axes.set_title(title, loc="left", fontsize=10)
    return figure


def trend_figure(
    rounds: Sequence[str],
    agreement: Mapping[str, Sequence[tuple[float | None, float | None, float | None]]],
    majors: Mapping[str, Sequence[int]],
    *,
    title: str,
    agreement_label: str = "adjacent agreement",
) -> Figure:
    """Per series (rubric or annotator): (value, low, high) per round, and major-disagreement
    counts per round. A round without a value leaves a gap."""
    figure, (left, right) = new_figure(8.4, 3.6, panels=2)
    positions = np.arange(len(rounds))
    for colour, (name, values) in zip(PALETTE * 10, agreement.items(), strict=False):
        value = np.array([np.nan if v[0] is None else v[0] for v in values], dtype=float)
        low = np.array([np.nan if v[1] is None else v[1] for v in values], dtype=float)
        high = np.array([np.nan if v[2] is None else v[2] for v in values], dtype=float)
        left.plot(positions, value, marker="o", color=colour, label=name)
        left.fill_between(positions, low, high, color=colour, alpha=0.12, lw=0)
    left.set_ylim(0, 1.02)
    left.set_ylabel(agreement_label)
    width = 0.8 / max(1, len(majors))
    for index, (colour, (name, counts)) in enumerate(
        zip(PALETTE * 10, majors.items(), strict=False)
    ):
        right.bar(
            positions + (index - (len(majors) - 1) / 2) * width,
            counts,
            width,
            color=colour,
            label=name,
        )
    right.set_ylabel(f"major disagreements (|diff| ≥ {MAJOR_POINTS})")
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    for axes in (left, right):
        axes.set_xticks(positions, rounds, rotation=15, ha="right")
        axes.spines[["top", "right"]].set_visible(False)
    if agreement:
        left.legend(fontsize=7, frameon=False, loc="lower right")
    figure.suptitle(title, x=0.01, ha="left", fontsize=10)
    return figure


CURVE_NO_DATA = "too few clinician-scored conversations for a learning curve yet"


def learning_curve_figure(curve: pd.DataFrame, *, names: Mapping[str, str], title: str) -> Figure:
    """`curve`: rubric, n_train, adjacent, mean_abs_diff (alignment.engine.calibration's
    learning_curve); `names`: rubric id -> the name in the legend."""
    figure, (left, right) = new_figure(8.4, 3.4, panels=2)
    for colour, (rubric, rows) in zip(
        PALETTE * 10, curve.groupby("rubric", sort=False), strict=False
    ):
        rows = rows.sort_values("n_train")
        label = names.get(rubric, rubric)
        left.plot(rows["n_train"], rows["adjacent"], marker="o", color=colour, label=label)
        right.plot(rows["n_train"], rows["mean_abs_diff"], marker="o", color=colour, label=label)
    left.set_ylim(0, 1.02)
    left.set_ylabel("adjacent agreement (held out)")
    right.set_ylim(bottom=0)
    right.set_ylabel("mean absolute difference (held out)")
    for axes in (left, right):
        axes.set_xlabel("clinician-scored conversations learned from")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if curve.empty:
        left.text(0.5, 0.5, CURVE_NO_DATA, transform=left.transAxes, ha="center", color="#57606a")
    else:
        left.legend(fontsize=7, frameon=False, loc="lower right")
    figure.suptitle(title, x=0.01, ha="left", fontsize=10)
    return figure


def versions_figure(
    versions: Sequence[str],
    agreement: Mapping[str, Sequence[tuple[float | None, float | None, float | None]]],
    *,
    title: str,
) -> Figure:
    """A line per rubric: (value, low, high) per jury version, the interval as a band; a
    version without a value leaves a gap."""
    figure, axes = _figure(6.4, 3.6)
    positions = np.arange(len(versions))
    for colour, (name, values) in zip(PALETTE * 10, agreement.items(), strict=False):
        value, low, high = (
            np.array([np.nan if v[part] is None else v[part] for v in values], dtype=float)
            for part in range(3)
        )
        axes.plot(positions, value, marker="o", color=colour, label=name)
        axes.fill_between(positions, low, high, color=colour, alpha=0.12, lw=0)
    axes.set_ylim(0, 1.02)
    axes.set_ylabel("adjacent agreement")
    axes.set_xticks(positions, versions)
    axes.set_xlabel("jury version")
    if agreement:
        axes.legend(fontsize=7, frameon=False, loc="lower right")
    axes.set_title(title, loc="left", fontsize=10)
    return figure


def _figure(width: float, height: float):
    figure, (axes,) = new_figure(width, height)
    return figure, axes


def in_study_order(points: pd.DataFrame, conversation_ids: Iterable[int]) -> pd.DataFrame:
    """The points sorted by their conversation's place among the study's conversations (by
    id), that place as ORDER. An archive import gives every conversation a new id but keeps
    their order, so the points are drawn in the same order and jittered alike: a figure of
    the imported study is the original's, byte for byte."""
    rank = {pk: place for place, pk in enumerate(sorted(conversation_ids))}
    ordered = points.assign(**{ORDER: points["item"].map(rank)})
    return ordered.sort_values(ORDER, kind="stable").reset_index(drop=True)


def _jitter(points: pd.DataFrame, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each point's (x, y) offset, drawn for its ORDER (else its row) from `seed`: a point
    keeps its offset whichever other points a filter leaves out."""
    keys = points[ORDER].to_numpy(int) if ORDER in points else np.arange(len(points))
    offsets = np.random.default_rng(seed).uniform(-JITTER, JITTER, (keys.max(initial=-1) + 1, 2))
    return offsets[keys, 0], offsets[keys, 1]


def _note_if_empty(axes, points: pd.DataFrame) -> None:
    if points.empty:
        axes.text(0.5, 0.5, NO_DATA, transform=axes.transAxes, ha="center", color="#57606a")


def _by_model(points: pd.DataFrame):
    models = points["model"].fillna("unknown model").to_numpy()
    for model in sorted(set(models)):
        yield model, np.flatnonzero(models == model)


def _score_axes(axes, xlabel: str, ylabel: str) -> None:
    axes.set_xlim(0.5, 5.5)
    axes.set_ylim(0.5, 5.5)
    axes.set_xticks(LEVELS)
    axes.set_yticks(LEVELS)
    axes.set_aspect("equal")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
