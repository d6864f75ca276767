"""Report statistics: confidence intervals, model tables, subgroup sensitivity, judge agreement.

Inputs are plain DataFrames built from the merged jury results:
- rubric scores: one row per (conversation, rubric) with `model`, `rubric`, `score` (the
  jury-averaged score) and `passed`;
- conversations: one row per scored conversation with `model`, `aggregate` and any seed
  attributes (personality, severity, age_group, ...).
Everything is grouped and vectorised; no loops over rows.

Repetitions of one case (a run's repetitions: the same patient met again) are not independent,
so every interval here treats a case as one cluster when the frames carry a `case` column: the
mean's interval uses the cluster-robust variance (the sum over cases of each case's summed
deviations, squared, times G / (G - 1), over n squared; Student t with G - 1 degrees of freedom,
G cases), and a pass rate's Wilson interval uses the effective sample size n / deff (deff: the
clustered variance over that of the same estimator with one conversation per case, at least 1;
the number of cases when every conversation passed or none did). With one conversation per
case both are the textbook intervals exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from common.csv_export import LINE_END, frame_csv
from common.proportions import wilson_interval
from jury.engine.aggregate import PASS_THRESHOLD
from jury.engine.intervals import SCORE, Scale, cut_note, interval_note
from jury.engine.latex_tables import latex_tables
from jury.engine.score_gaps import is_adjacent

CONFIDENCE = 0.95
CLUSTER = "case"  # repetitions of one case form one cluster
EXPORT_FORMATS = ("csv", "markdown", "latex")
MODEL_COLUMN, AGGREGATE_COLUMN = "Model", "Aggregate (95% CI)"
MEAN_DECIMALS = 2  # of every mean in the model table (page and exports)
# The model table's n: complete conversations, and the cases (benchmark entries) they cover.
COUNT_COLUMNS = ("Conversations", "Cases")


@dataclass(frozen=True)
class MeanCI:
    mean: float
    low: float
    high: float
    sd: float  # sample standard deviation (ddof=1)
    n: int


def mean_ci(
    values: Sequence[float], confidence: float = CONFIDENCE, *, scale: Scale = SCORE
) -> MeanCI:
    """Mean with a Student-t confidence interval cut at the ends of the scale (scores: 1-5;
    see jury.engine.intervals); the bounds are NaN below two values."""
    array = np.asarray(values, dtype=float)
    array = array[~np.isnan(array)]
    n = len(array)
    mean = float(array.mean()) if n else math.nan
    sd = float(array.std(ddof=1)) if n > 1 else math.nan
    low, high, _ = _t_bounds(np.array([mean]), np.array([sd]), np.array([n]), confidence, scale)
    return MeanCI(mean=mean, low=float(low[0]), high=float(high[0]), sd=sd, n=n)


def model_table(
    rubric_scores: pd.DataFrame,
    conversations: pd.DataFrame,
    *,
    rubric_order: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Per model (index, best aggregate first): n, aggregate mean with CI (`aggregate_cut`:
    whether the t interval reached past the 1-5 scale and was cut), then for every
    rubric `<rubric>_mean`, `<rubric>_pass_rate` and its Wilson bounds `_pass_low/_pass_high`."""
    table = _aggregate_summary(conversations, confidence)
    grouped = rubric_scores.groupby(["model", "rubric"])
    per_rubric = grouped.agg(mean=("score", "mean"), passes=("passed", "sum"), n=("passed", "size"))
    effective = effective_n(rubric_scores, ["model", "rubric"], "passed").reindex(per_rubric.index)
    rate = per_rubric["passes"] / per_rubric["n"]
    low, high = wilson_interval(rate * effective, effective, confidence)
    per_rubric = per_rubric.assign(pass_rate=rate, pass_low=low, pass_high=high)
    wide = _widen(per_rubric, ["mean", "pass_rate", "pass_low", "pass_high"], rubric_order)
    return table.join(wide).sort_values("aggregate_mean", ascending=False)


def model_sd_table(
    rubric_scores: pd.DataFrame,
    conversations: pd.DataFrame,
    *,
    rubric_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per model: aggregate and per-rubric mean and conversation-to-conversation sd."""
    table = conversations.groupby("model")["aggregate"].agg(["mean", "std"])
    table.columns = ["aggregate_mean", "aggregate_sd"]
    per_rubric = rubric_scores.groupby(["model", "rubric"])["score"].agg(["mean", "std"])
    per_rubric.columns = ["mean", "sd"]
    wide = _widen(per_rubric, ["mean", "sd"], rubric_order)
    return table.join(wide).sort_values("aggregate_mean", ascending=False)


def subgroup_sensitivity(
    conversations: pd.DataFrame,
    *,
    attribute: str,
    value: str = "aggregate",
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Subgroup means against each model's overall confidence band.

    The band is the CI of the model's mean over all its conversations. A subgroup (one value
    of `attribute` within one model) is flagged when its own CI lies entirely outside the band:
    `direction` is "above" when its lower bound exceeds the band's upper bound, "below" when
    its upper bound is under the band's lower bound. A subgroup with fewer than two cases (two
    conversations when the frame has no `case`) has no CI and is never flagged.
    """
    overall = _mean_ci_frame(conversations, ["model"], value, confidence)
    groups = _mean_ci_frame(conversations, ["model", attribute], value, confidence)
    groups = groups.reset_index().rename(columns={attribute: "subgroup"})
    band = overall[["low", "high"]].rename(columns={"low": "band_low", "high": "band_high"})
    result = groups.join(band, on="model")
    above = result["low"] > result["band_high"]
    below = result["high"] < result["band_low"]
    result["flagged"] = above | below
    result["direction"] = np.select([above, below], ["above", "below"], default="")
    return result.rename(columns={"low": "ci_low", "high": "ci_high"})


def inter_judge_agreement(scores: pd.DataFrame, *, threshold: float = PASS_THRESHOLD):
    """Per rubric, over conversations every judge scored validly: exact agreement share, share
    within one point (adjacent), pass agreement share and the mean absolute difference between
    judges (averaged over judge pairs when there are more than two)."""
    wide = scores.pivot(index=["rubric", "conversation_id"], columns="judge", values="score")
    if wide.shape[1] < 2:
        raise ValueError("agreement needs at least two judges")
    wide = wide.dropna()
    matrix = wide.to_numpy()
    k = matrix.shape[1]
    spread = matrix.max(axis=1) - matrix.min(axis=1)
    passes = matrix >= threshold
    pairwise = np.abs(matrix[:, :, None] - matrix[:, None, :]).sum(axis=(1, 2)) / (k * (k - 1))
    per_conversation = pd.DataFrame(
        {
            "exact_agreement": spread == 0,
            "adjacent_agreement": is_adjacent(spread),
            "pass_agreement": passes.all(axis=1) | ~passes.any(axis=1),
            "mean_abs_diff": pairwise,
        },
        index=wide.index,
    )
    grouped = per_conversation.groupby(level="rubric")
    return grouped.mean().astype(float).assign(n=grouped.size())


def format_model_table(table: pd.DataFrame, codes: Mapping[str, str]) -> pd.DataFrame:
    """Table 4 layout as text: aggregate with CI, then per rubric mean and pass % with CI.
    `codes` maps rubric id to its short code, in column order."""
    columns = {
        MODEL_COLUMN: table.index.astype(str),
        AGGREGATE_COLUMN: _with_interval(
            table["aggregate_mean"],
            table["aggregate_low"],
            table["aggregate_high"],
            MEAN_DECIMALS,
            n=table["n"],
            cut=table.get("aggregate_cut"),
        ),
    }
    for rubric, code in codes.items():
        columns[_mean_column(code)] = table[f"{rubric}_mean"].map("{:.2f}".format)
        columns[_pass_column(code)] = _with_interval(
            100 * table[f"{rubric}_pass_rate"],
            100 * table[f"{rubric}_pass_low"],
            100 * table[f"{rubric}_pass_high"],
            1,
        )
    return pd.DataFrame(columns).reset_index(drop=True)


def shown_mean(value: float) -> str:
    """A mean as the model table prints it: two models whose means print alike are tied."""
    return f"{value:.{MEAN_DECIMALS}f}"


def model_table_parts(text: pd.DataFrame, codes: Mapping[str, str]) -> dict[str, list[str]]:
    """The columns of the model export (17 with six rubrics, the counts and the standing
    against the best) as two tables that each fit a page: the aggregate, the rubric means and
    any further column; then the pass rates. The counts (COUNT_COLUMNS, when present) follow
    the model in both."""
    means = [_mean_column(code) for code in codes.values()]
    passes = [_pass_column(code) for code in codes.values()]
    counts = [column for column in COUNT_COLUMNS if column in text.columns]
    first = [MODEL_COLUMN, *counts, AGGREGATE_COLUMN]
    further = [column for column in text.columns if column not in {*first, *means, *passes}]
    return {
        "mean scores": [*first, *means, *further],
        "pass rates": [MODEL_COLUMN, *counts, *passes],
    }


def _mean_column(code: str) -> str:
    return f"{code} mean"


def _pass_column(code: str) -> str:
    return f"{code} pass % (95% CI)"


def format_sd_table(table: pd.DataFrame, codes: Mapping[str, str]) -> pd.DataFrame:
    """Table 6 layout as text: "mean (sd)" for the aggregate and each rubric."""
    columns = {
        "Model": table.index.astype(str),
        "Aggregate": _with_sd(table["aggregate_mean"], table["aggregate_sd"]),
    }
    for rubric, code in codes.items():
        columns[code] = _with_sd(table[f"{rubric}_mean"], table[f"{rubric}_sd"])
    return pd.DataFrame(columns).reset_index(drop=True)


def export_table(
    table: pd.DataFrame,
    fmt: str,
    *,
    caption: str,
    label: str,
    parts: Mapping[str, Sequence[str]] | None = None,
    part_captions: Mapping[str, str] | None = None,
    note: str = "",
) -> str:
    """A text table as CSV, Markdown (pipe table) or LaTeX (booktabs, with `caption` and
    `label`, split into `parts` when given, each with its own caption from `part_captions`;
    see latex_tables). CSV and Markdown are one table and carry no caption. A `note` the
    reader must not miss heads the file: a "#" comment line of the CSV, a quote above the
    Markdown table, the end of every LaTeX caption."""
    if fmt == "csv":
        return (f"# {note}{LINE_END}" if note else "") + frame_csv(table)
    if fmt == "markdown":
        return (f"> {note}\n\n" if note else "") + _markdown(table)
    if fmt == "latex":
        if note:
            own = part_captions or {}
            part_captions = {p: f"{own.get(p, f'{caption}: {p}')}. {note}" for p in parts or {}}
            caption = f"{caption}. {note}"
        return latex_tables(
            table, caption=caption, label=label, parts=parts, part_captions=part_captions
        )
    raise ValueError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")


def _aggregate_summary(conversations: pd.DataFrame, confidence: float) -> pd.DataFrame:
    summary = _mean_ci_frame(conversations, ["model"], "aggregate", confidence, cut=True)
    names = {
        "mean": "aggregate_mean",
        "low": "aggregate_low",
        "high": "aggregate_high",
        "cut": "aggregate_cut",
    }
    return summary.rename(columns=names)[["n", *names.values()]]


def _mean_ci_frame(
    frame: pd.DataFrame, keys: list[str], value: str, confidence: float, *, cut: bool = False
) -> pd.DataFrame:
    """Per group of 1-5 scores: n, mean and its cluster-robust t interval on the scale (see
    the module's note); with `cut`, also whether the interval was cut there."""
    groups = clustered_variance(frame, keys, value)
    # As a t interval over G clusters: half = t(G - 1) * sqrt(variance), so sd * sqrt(G).
    sd = np.sqrt(groups["variance"] * groups["clusters"])
    low, high, was_cut = _t_bounds(groups["mean"], sd, groups["clusters"], confidence, SCORE)
    columns = ["n", "mean", "low", "high", *(["cut"] if cut else [])]
    return groups.assign(low=low, high=high, cut=was_cut)[columns]


def clustered_variance(frame: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Per group: n (rows with a value), mean, clusters (G) and the cluster-robust variance of
    the mean, G / (G - 1) * sum over clusters of (summed deviations)^2 / n^2 (NaN below two
    clusters). A frame without a `case` column has each row as its own cluster."""
    data = frame[[*keys, value]].copy()
    data["_cluster"] = frame[CLUSTER].to_numpy() if CLUSTER in frame else np.arange(len(frame))
    data = data.dropna(subset=[value])
    data[value] = data[value].astype(float)
    grouped = data.groupby(keys, sort=True)[value]
    data["_deviation"] = data[value] - grouped.transform("mean")
    summed = data.groupby([*keys, "_cluster"])["_deviation"].sum() ** 2
    by_group = summed.groupby(level=list(range(len(keys))))
    result = grouped.agg(["count", "mean"]).rename(columns={"count": "n"})
    result["clusters"] = by_group.size().reindex(result.index)
    squares = by_group.sum().reindex(result.index)
    clusters = result["clusters"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(clusters > 1, clusters / (clusters - 1), np.nan)
        result["variance"] = factor * squares / result["n"].astype(float) ** 2
    return result


def effective_n(frame: pd.DataFrame, keys: list[str], value: str) -> pd.Series:
    """Per group, the sample size a proportion of `value` (booleans) is worth once its
    clusters are allowed for: n / deff, deff = the clustered variance over the variance of the
    same estimator with every row its own cluster, at least 1; the number of clusters when
    every row passed or none did."""
    groups = clustered_variance(frame, keys, value)
    p, n = groups["mean"], groups["n"].astype(float)
    # The same estimator's variance had every row been its own cluster (so deff is exactly 1
    # with one conversation per case): p (1 - p) / (n - 1).
    binomial = p * (1 - p) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.maximum(groups["variance"] / binomial, 1.0)
        size = np.where(binomial > 0, n / deff, groups["clusters"])
    # Below two clusters nothing says how they vary: the clusters are all it is worth.
    return pd.Series(np.where(np.isnan(size), groups["clusters"], size), index=groups.index)


def _t_bounds(mean, sd, n, confidence: float, scale: Scale):
    """mean +/- t * sd / sqrt(n), cut at the ends of the scale (NaN stays NaN), and whether
    each interval was cut."""
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        degrees = np.where(n > 1, n - 1, np.nan)
        half = scipy_stats.t.ppf(1 - (1 - confidence) / 2, degrees) * np.asarray(sd) / np.sqrt(n)
    low, high = np.asarray(mean) - half, np.asarray(mean) + half
    cut = (low < scale.low) | (high > scale.high)
    return np.clip(low, scale.low, scale.high), np.clip(high, scale.low, scale.high), cut


def _widen(per_rubric: pd.DataFrame, measures: list[str], order: Sequence[str] | None):
    wide = per_rubric[measures].unstack("rubric")
    present = sorted(wide.columns.get_level_values("rubric").unique())
    rubrics = list(order) if order is not None else present
    columns = [(measure, rubric) for rubric in rubrics for measure in measures]
    wide = wide.reindex(columns=pd.MultiIndex.from_tuples(columns))
    wide.columns = [f"{rubric}_{measure}" for measure, rubric in wide.columns]
    return wide


def _with_interval(estimate, low, high, digits: int, n=None, cut=None) -> pd.Series:
    """ "4.21 [3.98, 4.44]"; with the counts `n`, each interval printed by `interval_text`."""
    counts = n if n is not None else [None] * len(estimate)
    cuts = cut if cut is not None else [False] * len(estimate)
    cells = []
    for value, lower, upper, count, was_cut in zip(estimate, low, high, counts, cuts, strict=True):
        bounds = (
            f"[{lower:.{digits}f}, {upper:.{digits}f}]"
            if count is None
            else interval_text(lower, upper, digits, n=int(count), cut=was_cut)
        )
        cells.append(f"{value:.{digits}f} {bounds}")
    return pd.Series(cells, index=estimate.index)


def interval_text(low: float, high: float, digits: int, *, n: int, cut: bool = False) -> str:
    """An interval as the model table prints it beside its value: "[3.98, 4.44]"; a missing
    or zero-width one gives its reason instead ("(zero width: every conversation has the same
    value)"), and one `cut` at the end of the scale keeps its bounds and says so."""
    bounds = f"[{low:.{digits}f}, {high:.{digits}f}]"
    note = interval_note(n, low, high, cut=cut)
    if not note:
        return bounds
    return f"{bounds} ({note})" if note == cut_note() else f"({note})"


def _with_sd(mean, sd) -> pd.Series:
    return pd.Series(
        [f"{m:.2f} ({s:.2f})" for m, s in zip(mean, sd, strict=True)], index=mean.index
    )


def _markdown(table: pd.DataFrame) -> str:
    def row(cells) -> str:
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    lines = [row(table.columns), row(["---"] * len(table.columns))]
    lines += [row(values) for values in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"
