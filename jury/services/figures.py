"""The jury report's figures for a paper, drawn with matplotlib and rendered by
common.figures (inline SVG on the page; SVG, PNG at 300 dpi or PDF to download):

- aggregates: how each model's conversation aggregates spread over the 1-5 scale, in bins of
  0.5, one bar per model in each bin;
- pass rates: per rubric, each model's share of conversations the jury passed, with its 95%
  Wilson interval;
- pass^k: per model, the chance that k encounters of one case all pass, k = 1 to the run's
  repetitions, with its bootstrap interval over cases (jury.engine.reliability);
- variance components: per model and measure, the share of the score variance due to the case,
  the repetition within a case, the judge, case x judge and the residual (jury.engine.variance);
- subgroup sensitivity (the sensitivity tab, one per attribute and score): each model's
  subgroup means with their 95% CI against the model's overall band, flagged ones in red, on
  the x range every chart of the tab shares.

Only complete conversations count, as in every table of the report; a report without one
has no figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from common.figures import PALETTE, new_figure
from jury.engine.variance import COMPONENT_NAMES, COMPONENTS
from jury.services.reports import (
    ATTRIBUTES,
    Report,
    model_table,
    readable,
    sensitivity_domain,
    sensitivity_results,
)

HISTOGRAM_EDGES = np.arange(1.0, 5.01, 0.5)
FIGURES = {
    "aggregates": "Conversation aggregates per model",
    "pass-rates": "Pass rate per rubric and model (95% Wilson interval)",
    "pass-k": "pass^k: every one of k encounters of a case passes (95% bootstrap over cases)",
    "variance": "Where the score variance comes from (REML variance components)",
}
FLAG_COLOUR, BAND_COLOUR = "#cf222e", "#dbe7ff"


def report_figure(report: Report, kind: str) -> Figure:
    """The report's figure `kind` (one of FIGURES); the report has complete conversations."""
    table = model_table(report)
    if kind == "aggregates":
        return _aggregates(report, table)
    if kind == "pass-rates":
        return _pass_rates(report, table)
    if kind == "pass-k":
        return _pass_k(report)
    if kind == "variance":
        return _variance(report)
    raise ValueError(f"figure must be one of {', '.join(FIGURES)}, not {kind!r}")


def _aggregates(report: Report, table: pd.DataFrame) -> Figure:
    figure, (axes,) = new_figure(6.4, 3.2)
    bins = pd.cut(
        report.conversations["aggregate"], HISTOGRAM_EDGES, include_lowest=True, right=False
    )
    counts = report.conversations.groupby(["model", bins], observed=False).size().unstack()
    width = 0.5 / (len(table.index) + 1)
    for index, (colour, model) in enumerate(zip(PALETTE * 10, table.index, strict=False)):
        axes.bar(
            HISTOGRAM_EDGES[:-1] + (index + 1) * width,
            counts.loc[model].to_numpy(),
            width,
            color=colour,
            label=report.label(model),
        )
    axes.set_xticks(HISTOGRAM_EDGES)
    axes.set_xlim(HISTOGRAM_EDGES[0], HISTOGRAM_EDGES[-1])
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("conversation aggregate (bins of 0.5)")
    axes.set_ylabel("conversations")
    axes.legend(fontsize=7, frameon=False, loc="upper left")
    axes.set_title(FIGURES["aggregates"], loc="left", fontsize=10)
    return figure


def _pass_rates(report: Report, table: pd.DataFrame) -> Figure:
    rubrics = list(report.rubrics)
    figure, (axes,) = new_figure(6.4, 1.0 + 0.45 * len(rubrics) * max(1, len(table.index) / 2))
    positions = np.arange(len(rubrics))[::-1]  # the first rubric at the top
    height = 0.8 / len(table.index)
    for index, (colour, model) in enumerate(zip(PALETTE * 10, table.index, strict=False)):
        row = table.loc[model]
        rate = np.array([row[f"{rubric}_pass_rate"] for rubric in rubrics], dtype=float)
        low = np.array([row[f"{rubric}_pass_low"] for rubric in rubrics], dtype=float)
        high = np.array([row[f"{rubric}_pass_high"] for rubric in rubrics], dtype=float)
        offset = positions + 0.4 - (index + 0.5) * height
        axes.barh(offset, rate, height, color=colour, alpha=0.85, label=report.label(model))
        axes.errorbar(
            rate,
            offset,
            xerr=[rate - low, high - rate],
            fmt="none",
            ecolor="#1f2328",
            elinewidth=0.8,
            capsize=2,
        )
    axes.set_yticks(positions, [report.rubric_names[rubric] for rubric in rubrics])
    axes.set_xlim(0, 1)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("conversations passed")
    figure.legend(fontsize=7, frameon=False, loc="outside lower center", ncols=2)
    axes.set_title(FIGURES["pass-rates"], loc="left", fontsize=10)
    return figure


def _pass_k(report: Report) -> Figure:
    """The aggregate's pass^k curve per model over every case, its interval shaded."""
    figure, (axes,) = new_figure(6.4, 3.2)
    rows = report.reliability
    overall = rows[(rows["measure"] == "aggregate") & (rows["stratum"] == "all")]
    curves = overall.groupby("model", sort=False)
    for colour, (model, curve) in zip(PALETTE * 10, curves, strict=False):
        axes.plot(curve["k"], curve["pass_hat_k"], marker="o", color=colour, label=model)
        axes.fill_between(curve["k"], curve["low"], curve["high"], color=colour, alpha=0.15)
    axes.set_xticks(sorted(overall["k"].unique()))
    axes.set_ylim(0, 1)
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("k (encounters of the same case)")
    axes.set_ylabel("pass^k")
    axes.legend(fontsize=7, frameon=False, loc="lower left")
    axes.set_title(FIGURES["pass-k"], loc="left", fontsize=10)
    return figure


def _variance(report: Report) -> Figure:
    """One panel per model: a bar per measure split into the components' shares."""
    rows = report.variance
    models = list(dict.fromkeys(rows["model"]))
    measures = [m for m in ["aggregate", *report.rubrics] if m in set(rows["measure"])]
    names = {"aggregate": "Aggregate", **report.rubric_names}
    height = 0.9 + len(models) * (0.45 + 0.2 * len(measures))
    figure, panels = new_figure(6.4, height, panels=len(models), stacked=True, sharex=True)
    positions = np.arange(len(measures))
    for axes, model in zip(panels, models, strict=True):
        shares = rows[rows["model"] == model].pivot(
            index="measure", columns="component", values="share"
        )
        shares = shares.reindex(index=measures, columns=list(COMPONENTS)).fillna(0.0)
        left = np.zeros(len(measures))
        for colour, component in zip(PALETTE, COMPONENTS, strict=False):
            label = COMPONENT_NAMES[component] if axes is panels[0] else None
            axes.barh(positions, shares[component], left=left, color=colour, label=label)
            left += shares[component].to_numpy()
        axes.set_yticks(positions, [names.get(measure, measure) for measure in measures])
        axes.invert_yaxis()
        axes.set_xlim(0, 1)
        axes.set_title(model, loc="left", fontsize=8)
    panels[-1].xaxis.set_major_formatter(PercentFormatter(1.0))
    panels[-1].set_xlabel("share of the score variance")
    figure.legend(fontsize=7, frameon=False, loc="outside lower center", ncols=3)
    figure.suptitle(FIGURES["variance"], x=0.01, ha="left", fontsize=10)
    return figure


def sensitivity_figure(
    report: Report, measure: str, attribute: str, title: str, results: dict | None = None
) -> Figure:
    """The subgroups of `attribute` on `measure`, one panel per model, one x range for all.
    `results` (sensitivity_results of the measure) saves recomputing them for each attribute."""
    results = results or sensitivity_results(report, measure)
    low, high = sensitivity_domain(results)
    by_model = list(results[attribute].groupby("model", sort=True))
    rows = max(len(subgroups) for _, subgroups in by_model)
    figure, panels = new_figure(
        6.4,
        0.6 + len(by_model) * (0.5 + 0.25 * rows),
        panels=len(by_model),
        stacked=True,
        sharex=True,
    )
    for axes, (model, subgroups) in zip(panels, by_model, strict=True):
        subgroups = subgroups.sort_values("subgroup").reset_index(drop=True)
        band = subgroups[["band_low", "band_high"]].iloc[0].to_numpy(dtype=float)
        if np.isfinite(band).all():
            axes.axvspan(*band, color=BAND_COLOUR, lw=0)
        position = np.arange(len(subgroups))[::-1]
        mean = subgroups["mean"].to_numpy(dtype=float)
        spread = [
            mean - subgroups["ci_low"].fillna(subgroups["mean"]).to_numpy(dtype=float),
            subgroups["ci_high"].fillna(subgroups["mean"]).to_numpy(dtype=float) - mean,
        ]
        colours = [FLAG_COLOUR if flag else PALETTE[0] for flag in subgroups["flagged"]]
        axes.errorbar(mean, position, xerr=spread, fmt="none", ecolor=colours, elinewidth=1.5)
        axes.scatter(mean, position, color=colours, s=18, zorder=3)
        axes.set_yticks(
            position,
            [
                f"{readable(v)} (n={n})"
                for v, n in zip(subgroups["subgroup"], subgroups["n"], strict=True)
            ],
        )
        axes.set_ylim(-0.7, rows - 0.3)
        axes.set_title(report.label(model), loc="left", fontsize=9)
    panels[-1].set_xlim(low, high)  # an interval past the axis is cut at it
    panels[-1].set_xlabel(f"{title}: subgroup mean (95% CI); band: the model's 95% CI")
    figure.suptitle(
        f"{ATTRIBUTES[attribute]}: subgroups against each model's band",
        x=0.01,
        ha="left",
        fontsize=10,
    )
    return figure
