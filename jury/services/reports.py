"""Read side of the jury: report frames built from stored results, tables, charts, exports.

Frames are loaded with one query each (values_list into pandas) and every statistic comes from
jury.engine.stats, so a report over thousands of conversations never loops over rows in
Python. Only complete conversations (every rubric scored validly by all K judges) enter the
statistics; incomplete and excluded ones are counted and shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from django.db.models import Count, Q, Sum

from benchmark import charts
from benchmark.models import BenchmarkEntry, RunAgent
from jury.engine import paired, reliability, stats, variance
from jury.engine.aggregate import judge_aggregate_frame
from jury.models import ConversationResult, JudgeScore, RubricResult, ScoreStatus, ScoringJob
from jury.services.scoring import job_conversations

ATTRIBUTES = {
    "personality": "Personality",
    "complexity": "Scenario complexity",
    "severity": "Severity",
    "age_group": "Age group",
    "gender_identity": "Gender identity",
    "task_category": "Task category",
}
SCRIPTED_NOTE = "scripted, not a model"
EXPORT_TABLES = (
    "models",
    "spread",
    "outcomes",
    "sensitivity",
    "agreement",
    "comparison",
    "reliability",
    "variance",
)
EXPORT_CAPTIONS = {  # what each table shows, for the LaTeX caption
    "models": "Scores per model: the aggregate with its 95% CI; per rubric the jury mean and the "
    "pass rate with its 95% Wilson interval; n complete conversations and the cases they cover",
    "spread": "Mean (sd) per model of the aggregate and of each rubric's jury mean",
    "outcomes": "Objective outcome checks per model, from the sandbox's write actions",
    "sensitivity": "Subgroup means with 95% CI against each model's overall 95% CI band",
    "agreement": "Agreement between the jury's judges per rubric",
    "comparison": "Paired comparisons of agents on shared cases: mean difference with its "
    "paired bootstrap 95% CI, Wilcoxon signed-rank and Holm-adjusted p",
    "reliability": "pass^k per model, measure and stratum: the chance that k encounters of one "
    "case all pass (unbiased estimate over the run's repetitions, 95% bootstrap interval over "
    "cases) and the expected worst score of k encounters",
    "variance": "Where the spread of each model's scores comes from: REML variance components "
    "(case, repetition within a case, judge, case x judge, residual) with 95% Satterthwaite "
    "intervals, and each one's share of the total with its delta-method interval",
}
# In LaTeX the model table is two tables (stats.model_table_parts), each saying what it shows.
MODEL_PART_CAPTIONS = {
    "mean scores": "Mean scores per model (1-5): the aggregate with its 95% CI, each rubric's "
    "jury mean and the paired standing against the best model; n complete conversations and "
    "the cases they cover",
    "pass rates": "Pass rates per model: per rubric the share of conversations the jury "
    "passed, in percent with its 95% Wilson interval; n complete conversations and the cases "
    "they cover",
}
EXPORT_FORMATS = {  # URL suffix -> (stats format, content type)
    "csv": ("csv", "text/csv"),
    "md": ("markdown", "text/markdown"),
    "tex": ("latex", "application/x-tex"),
}
# What the paired comparison page's legend states about the method.
COMPARISON_METHOD = {
    "resamples": paired.RESAMPLES,
    "alpha": paired.ALPHA,
    "min_cases": paired.MIN_CASES_TO_DETECT,
}
FAILURES_SHOWN = 25


@dataclass
class Report:
    """Everything a report page needs about one scoring job, loaded once."""

    job: ScoringJob

    @cached_property
    def agents(self) -> dict[int, RunAgent]:
        return {agent.pk: agent for agent in self.job.run.agents.all()}

    @cached_property
    def scripted(self) -> set[str]:
        return {agent.label for agent in self.agents.values() if agent.is_scripted}

    @cached_property
    def rubrics(self) -> dict[str, str]:
        """Judged rubric id -> short code, in rubric order."""
        versions = self.job.rubric_versions.order_by("order")
        return dict(versions.values_list("rubric_id", "code"))

    @cached_property
    def rubric_names(self) -> dict[str, str]:
        return dict(self.job.rubric_versions.values_list("rubric_id", "name"))

    @cached_property
    def conversations(self) -> pd.DataFrame:
        """One row per complete conversation: model, case (the benchmark entry: every agent
        meets the same sandbox there), aggregate and the seed attributes."""
        fields = ["conversation_id", "aggregate", "conversation__run_agent_id"]
        fields += ["conversation__entry_id"]
        fields += [f"conversation__entry__{attribute}" for attribute in ATTRIBUTES]
        rows = ConversationResult.objects.filter(job=self.job, complete=True).values_list(*fields)
        frame = pd.DataFrame.from_records(
            rows, columns=["conversation_id", "aggregate", "agent", "case", *ATTRIBUTES]
        )
        labels = {pk: agent.label for pk, agent in self.agents.items()}
        return frame.assign(model=frame["agent"].map(labels)).drop(columns="agent")

    @cached_property
    def rubric_scores(self) -> pd.DataFrame:
        """One row per (complete conversation, rubric): the jury mean and the pass verdict."""
        rows = RubricResult.objects.filter(job=self.job).values_list(
            "conversation_id", "rubric_id", "mean", "passed"
        )
        frame = pd.DataFrame.from_records(
            rows, columns=["conversation_id", "rubric", "score", "passed"]
        )
        # The case travels along: the intervals treat a case's repetitions as one cluster.
        models = self.conversations[["conversation_id", "model", "case"]]
        return frame.merge(models, on="conversation_id", how="inner")

    @cached_property
    def counts(self) -> dict:
        results = ConversationResult.objects.filter(job=self.job).aggregate(
            scored=Count("id"), complete=Count("id", filter=Q(complete=True))
        )
        run = job_conversations(self.job)  # a re-score counts only its own conversations
        scorable = run.scorable().count()
        return {
            "complete": results["complete"],
            "incomplete": results["scored"] - results["complete"],
            "awaiting": scorable - results["scored"],
            "excluded": run.count() - scorable,
        }

    @property
    def empty(self) -> bool:
        return self.conversations.empty

    @cached_property
    def encounters(self) -> pd.DataFrame:
        """One row per (complete conversation, measure): the aggregate and each rubric's jury
        mean with its pass verdict, beside the conversation's model, case and attributes."""
        conversations = self.conversations
        aggregate = conversations.assign(
            measure="aggregate",
            score=conversations["aggregate"],
            passed=conversations["aggregate"] >= self.job.jury.pass_threshold,
        )
        rubrics = self.rubric_scores.rename(columns={"rubric": "measure"})[
            ["conversation_id", "measure", "score", "passed"]
        ].merge(conversations.drop(columns="aggregate"), on="conversation_id")
        return pd.concat([aggregate.drop(columns="aggregate"), rubrics], ignore_index=True)

    @cached_property
    def reliability(self) -> pd.DataFrame:
        """pass^k for k = 1..the run's repetitions (jury.engine.reliability.COLUMNS)."""
        table = reliability.reliability_table(
            self.encounters, strata=list(ATTRIBUTES), k_max=max(self.job.run.repetitions, 1)
        )
        return table.assign(model=table["model"].map(self.label))

    @cached_property
    def judge_encounters(self) -> pd.DataFrame:
        """One row per (complete conversation, judge, measure): model, measure (the aggregate of
        that judge's scores, or a rubric), case, conversation, judge, score."""
        scores = judge_scores(self)
        cases = self.conversations[["conversation_id", "case"]]
        aggregates = judge_aggregate_frame(scores, self.job.jury.weights).merge(
            self.conversations[["conversation_id", "model"]], on="conversation_id"
        )
        frames = [
            aggregates.rename(columns={"aggregate": "score"}).assign(measure="aggregate"),
            scores.rename(columns={"rubric": "measure"}),
        ]
        frame = pd.concat(frames, ignore_index=True).merge(cases, on="conversation_id")
        return frame.rename(columns={"conversation_id": "conversation"})

    @cached_property
    def variance(self) -> pd.DataFrame:
        """Variance components per model and measure (jury.engine.variance.COLUMNS)."""
        if self.empty:
            return pd.DataFrame(columns=variance.COLUMNS)
        table = variance.components_table(self.judge_encounters.dropna(subset=["score"]))
        return table.assign(model=table["model"].map(self.label))

    def label(self, model: str) -> str:
        return f"{model} ({SCRIPTED_NOTE})" if model in self.scripted else model


# --- the model tables (Table 4 and Table 6 shapes) ------------------------------------------


def model_table(report: Report) -> pd.DataFrame:
    return stats.model_table(
        report.rubric_scores, report.conversations, rubric_order=list(report.rubrics)
    )


def model_rows(report: Report, table: pd.DataFrame, marks: dict[str, str]) -> list[dict]:
    """Table 4 rows for the page: aggregate with CI, its standing against the best model
    (`best_marks`), then per rubric mean and pass rate."""
    rows = []
    for model, row in table.iterrows():  # one row per model, a handful at most
        rubrics = [
            {
                "rubric": rubric,
                "code": code,
                "name": report.rubric_names[rubric],
                "mean": row[f"{rubric}_mean"],
                "pass_rate": 100 * row[f"{rubric}_pass_rate"],
                "pass_low": 100 * row[f"{rubric}_pass_low"],
                "pass_high": 100 * row[f"{rubric}_pass_high"],
            }
            for rubric, code in report.rubrics.items()
        ]
        rows.append(
            {
                "model": model,
                "scripted": model in report.scripted,
                "n": int(row["n"]),
                "mean": row["aggregate_mean"],
                "low": row["aggregate_low"],
                "high": row["aggregate_high"],
                "interval_text": aggregate_interval_text(row),
                "versus_best": marks.get(model, ""),
                "rubrics": rubrics,
            }
        )
    return rows


def aggregate_interval_text(row) -> str:
    """The aggregate's interval as the page prints it (stats.interval_text)."""
    return stats.interval_text(
        row["aggregate_low"],
        row["aggregate_high"],
        stats.MEAN_DECIMALS,
        n=int(row["n"]),
        cut=bool(row["aggregate_cut"]),
    )


def best_marks(report: Report, table: pd.DataFrame) -> dict[str, str]:
    """Model -> "best", "indistinguishable", "different" or "untested": the paired aggregate
    test against the top model of `table` (Holm-adjusted over all pairs); every model whose
    aggregate prints as the top one's is "best" too. Empty for one model."""
    models = list(table.index)
    if len(models) < 2:
        return {}
    comparisons = paired.paired_comparisons(
        case_scores(report, ["aggregate"]),
        models=models,
        measures=["aggregate"],
        intervals=False,
    )
    shown = {model: stats.shown_mean(mean) for model, mean in table["aggregate_mean"].items()}
    return paired.versus_best(comparisons, models, shown=shown)


def spread_table(report: Report) -> pd.DataFrame:
    table = stats.model_sd_table(
        report.rubric_scores, report.conversations, rubric_order=list(report.rubrics)
    )
    return stats.format_sd_table(table.rename(index=report.label), report.rubrics)


# --- objective outcome checks ----------------------------------------------------------------


def outcome_rows(report: Report) -> list[dict]:
    """Per model, over every scored conversation (complete or not: no judge is involved)."""
    sums = (
        ConversationResult.objects.filter(job=report.job)
        .values("conversation__run_agent_id")
        .annotate(
            n=Count("id"),
            booked=Count("id", filter=Q(booked=True)),
            type_asked=Count("id", filter=Q(booked_type_matches__isnull=False)),
            type_matched=Count("id", filter=Q(booked_type_matches=True)),
            fabricating=Count("id", filter=Q(fabricated_count__gt=0)),
            fabricated=Sum("fabricated_count"),
        )
        .order_by("conversation__run_agent_id")
    )
    rows = []
    for row in sums:
        agent = report.agents[row.pop("conversation__run_agent_id")]
        rows.append(
            {
                **row,
                "model": agent.label,
                "scripted": agent.is_scripted,
                "booked_percent": _percent(row["booked"], row["n"]),
                "type_percent": _percent(row["type_matched"], row["type_asked"]),
                "fabricating_percent": _percent(row["fabricating"], row["n"]),
            }
        )
    return rows


def outcome_table(report: Report) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Model": report.label(row["model"]),
            "Conversations": row["n"],
            "Booked": f"{row['booked']} ({_format_percent(row['booked_percent'])})",
            "Booked at the asked type": (
                f"{row['type_matched']} of {row['type_asked']} "
                f"({_format_percent(row['type_percent'])})"
            ),
            "Conversations with fabricated completions": (
                f"{row['fabricating']} ({_format_percent(row['fabricating_percent'])})"
            ),
            "Fabricated completions": row["fabricated"] or 0,
        }
        for row in outcome_rows(report)
    )


def _percent(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def _format_percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


# --- exports -------------------------------------------------------------------------------


def export_text(report: Report, table_name: str, suffix: str) -> str:
    """One report table as CSV, Markdown or LaTeX (jury.engine.stats.export_table); in LaTeX
    the model table (up to 17 columns) is split into mean scores and pass rates."""
    table = export_frame(report, table_name)
    if table_name == "sensitivity" and suffix != "csv":
        table = sensitivity_text(table)  # CSV keeps the figures as numbers for analysis
    parts = stats.model_table_parts(table, report.rubrics) if table_name == "models" else None
    job = report.job
    source = f"run {job.run.name}, jury {job.jury.name}"
    part_captions = {part: f"{text}; {source}" for part, text in MODEL_PART_CAPTIONS.items()}
    return stats.export_table(
        table,
        EXPORT_FORMATS[suffix][0],
        caption=f"{EXPORT_CAPTIONS[table_name]}; {source}",
        label=f"job {job.pk} {table_name}",
        parts=parts,
        part_captions=part_captions,
        note=calibrated_note(job.jury),
    )


def calibrated_note(jury) -> str:
    """The line a calibrated jury's exports open with, naming the version and what it learned
    from ("" for an uncalibrated jury, whose exports stay as they were)."""
    return f"Scored by jury {jury.described}." if jury.is_calibrated else ""


def export_frame(report: Report, table_name: str) -> pd.DataFrame:
    """The table `table_name` (one of EXPORT_TABLES) as its exports write it (the API's too)."""
    if table_name == "models":
        return model_export_table(report)
    if table_name == "spread":
        return spread_table(report)
    if table_name == "outcomes":
        return outcome_table(report)
    if table_name == "sensitivity":
        return sensitivity_table(report)
    if table_name == "agreement":
        # The rubric is the index of the agreement frame; the export writes columns only.
        return stats.inter_judge_agreement(judge_scores(report)).reset_index()
    if table_name == "comparison":
        return comparison_table(report, comparisons(report, model_table(report)))
    if table_name == "reliability":
        return report.reliability
    if table_name == "variance":
        return report.variance
    raise ValueError(f"unknown table {table_name!r}")


def model_export_table(report: Report) -> pd.DataFrame:
    """Table 4 as text: the n of each model (complete conversations, and the cases they
    cover) after the rubrics, then the paired standing against the best model as the last
    column."""
    table = model_table(report)
    text = stats.format_model_table(table.rename(index=report.label), report.rubrics)
    cases = report.conversations.groupby("model")["case"].nunique()
    conversations_column, cases_column = stats.COUNT_COLUMNS
    text[conversations_column] = table["n"].astype(int).to_numpy()
    text[cases_column] = cases.reindex(table.index).astype(int).to_numpy()
    marks = best_marks(report, table)
    if marks:
        text["Versus best (paired)"] = [marks[model] for model in table.index]
    return text


# --- paired comparisons ----------------------------------------------------------------------


def case_scores(report: Report, measure_ids: list[str]) -> pd.DataFrame:
    """Per (model, case): each measure averaged over the model's complete repetitions."""
    frame = report.conversations
    rubrics = [measure for measure in measure_ids if measure != "aggregate"]
    if rubrics:
        scores = report.rubric_scores.pivot(
            index="conversation_id", columns="rubric", values="score"
        )
        frame = frame.join(scores[rubrics], on="conversation_id")
    return paired.case_means(frame, measure_ids)


def comparisons(report: Report, table: pd.DataFrame) -> pd.DataFrame:
    """Every pair of agents (best aggregate first) on the aggregate and each rubric."""
    measure_ids = ["aggregate", *report.rubrics]
    return paired.paired_comparisons(
        case_scores(report, measure_ids), models=list(table.index), measures=measure_ids
    )


def comparison_sections(report: Report, result: pd.DataFrame) -> list[dict]:
    """One section per measure (aggregate first), one row per pair, for the page."""
    names = measures(report)
    return [
        {
            "measure": measure,
            "title": names[measure],
            "rows": [
                {
                    **row,
                    "scripted_a": row["model_a"] in report.scripted,
                    "scripted_b": row["model_b"] in report.scripted,
                    "difference_text": _signed(row["mean_difference"]),
                    "interval_text": _signed_pair(row["ci_low"], row["ci_high"]),
                    "p_text": format_p(row["p"]),
                    "p_holm_text": format_p(row["p_holm"]),
                    "significant": row["p_holm"] < paired.ALPHA,
                }
                for row in rows.to_dict("records")
            ],
        }
        for measure, rows in result.groupby("measure", sort=False)
    ]


def comparison_table(report: Report, result: pd.DataFrame) -> pd.DataFrame:
    """Every (measure, pair) as text: difference with its interval, p-values, wins/ties/losses."""
    codes = {"aggregate": "Aggregate", **report.rubrics}
    return pd.DataFrame(
        {
            "Score": result["measure"].map(codes),
            "Model A": result["model_a"].map(report.label),
            "Model B": result["model_b"].map(report.label),
            "Cases": result["n"],
            "Mean difference A - B (95% CI)": [
                _signed_interval(*values)
                for values in zip(
                    result["mean_difference"], result["ci_low"], result["ci_high"], strict=True
                )
            ],
            "Wilcoxon p": result["p"].map(format_p),
            "Holm p": result["p_holm"].map(format_p),
            "A wins": result["wins"],
            "Ties": result["ties"],
            "B wins": result["losses"],
            "Note": result["note"],
        }
    )


def format_p(value: float) -> str:
    if not _finite(value):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _signed_interval(mean: float, low: float, high: float) -> str:
    interval = _signed_pair(low, high)
    return f"{_signed(mean)} {interval}" if interval else _signed(mean)


def _signed(value: float) -> str:
    return f"{value:+.2f}" if _finite(value) else "n/a"


def _signed_pair(low: float, high: float) -> str:
    """The interval as "[low, high]" with signs, or "" when it is undefined."""
    return f"[{low:+.2f}, {high:+.2f}]" if _finite(low) and _finite(high) else ""


# --- subgroup sensitivity ----------------------------------------------------------------


def measures(report: Report) -> dict[str, str]:
    return {"aggregate": "Aggregate", **report.rubric_names}


def sensitivity_sections(report: Report, measure: str) -> list[dict]:
    """Per attribute and model: subgroup means with 95% CI against the model's overall band.
    Every chart of the page shares one x range, so panels can be compared by eye."""
    results = sensitivity_results(report, measure)
    domain = sensitivity_domain(results)
    sections = []
    for attribute, title in ATTRIBUTES.items():
        result = results[attribute]
        sections.append(
            {
                "attribute": attribute,
                "title": title,
                "models": [
                    _sensitivity_chart(model, rows, title, domain)
                    for model, rows in result.groupby("model", sort=True)
                ],
                "flagged": [
                    {**row, "subgroup": readable(row["subgroup"])}
                    for row in result[result["flagged"]].to_dict("records")
                ],
            }
        )
    return sections


def sensitivity_table(report: Report) -> pd.DataFrame:
    """Every subgroup of every attribute, for the aggregate and each rubric, one row each."""
    scores = report.rubric_scores.pivot(index="conversation_id", columns="rubric", values="score")
    frame = report.conversations.join(scores, on="conversation_id")
    parts = [
        stats.subgroup_sensitivity(frame, attribute=attribute, value=measure).assign(
            measure=report.rubrics.get(measure, measure), attribute=attribute
        )
        for measure in ("aggregate", *report.rubrics)
        for attribute in ATTRIBUTES
    ]
    table = pd.concat(parts, ignore_index=True)
    table["model"] = table["model"].map(report.label)
    leading = ["measure", "attribute", "model"]
    return table[leading + [c for c in table.columns if c not in leading]]


def sensitivity_text(table: pd.DataFrame) -> pd.DataFrame:
    """`sensitivity_table` as a paper prints it: means and intervals to two decimals, the
    attribute and subgroup in words, and whether the subgroup lies outside its model's band
    ("above", "below" or "no") in place of the raw flag and direction."""
    return pd.DataFrame(
        {
            "Measure": table["measure"],
            "Attribute": table["attribute"].map(ATTRIBUTES),
            "Model": table["model"],
            "Subgroup": table["subgroup"].map(readable),
            "n": table["n"].astype(int),
            "Mean (95% CI)": [
                _mean_interval(*values)
                for values in zip(table["mean"], table["ci_low"], table["ci_high"], strict=True)
            ],
            "Model band (95% CI)": [
                _pair(low, high) or "n/a"
                for low, high in zip(table["band_low"], table["band_high"], strict=True)
            ],
            "Outside the band": table["direction"].where(table["flagged"], "no"),
        }
    )


def _mean_interval(mean: float, low: float, high: float) -> str:
    interval = _pair(low, high)
    return f"{mean:.2f} {interval}" if interval else f"{mean:.2f}"


def _pair(low: float, high: float) -> str:
    return f"[{low:.2f}, {high:.2f}]" if _finite(low) and _finite(high) else ""


def sensitivity_results(report: Report, measure: str) -> dict[str, pd.DataFrame]:
    """Attribute -> `stats.subgroup_sensitivity` of `measure` (the aggregate or a rubric)."""
    frame = report.conversations
    if measure != "aggregate":
        scores = report.rubric_scores.pivot(
            index="conversation_id", columns="rubric", values="score"
        )
        frame = frame.join(scores[[measure]], on="conversation_id")
    return {
        attribute: stats.subgroup_sensitivity(frame, attribute=attribute, value=measure)
        for attribute in ATTRIBUTES
    }


def sensitivity_domain(results: dict[str, pd.DataFrame]) -> tuple[float, float]:
    """The x range of every chart: the means, intervals and bands of all of them, widened to
    half points and held within the 1-5 scale (an interval reaching past it is cut there)."""
    columns = ["mean", "ci_low", "ci_high", "band_low", "band_high"]
    values = pd.concat(results.values())[columns].to_numpy(dtype=float).ravel()
    values = values[np.isfinite(values)]
    if not len(values):
        return (1.0, 5.0)
    low, high = math.floor(values.min() * 2) / 2, math.ceil(values.max() * 2) / 2
    return (max(1.0, low), min(5.0, high))


def _sensitivity_chart(model: str, rows: pd.DataFrame, title: str, domain) -> dict:
    rows = rows.sort_values("subgroup")
    band = (float(rows["band_low"].iloc[0]), float(rows["band_high"].iloc[0]))
    intervals = [
        charts.Interval(
            label=readable(row.subgroup),
            mean=row.mean,
            low=_or(row.ci_low, row.mean),
            high=_or(row.ci_high, row.mean),
            flagged=bool(row.flagged),
            note=f"{row.mean:.2f} (n={row.n})",
        )
        for row in rows.itertuples()
    ]
    band = band if all(_finite(b) for b in band) else (intervals[0].mean, intervals[0].mean)
    chart = charts.interval_rows(
        intervals, band=band, domain=domain, title=f"{model}: {title.lower()}"
    )
    return {"model": model, "chart": chart}


def readable(value) -> str:
    """A seed attribute value as a label: "young_adult" -> "young adult"."""
    return str(value).replace("_", " ") or "(blank)"


def _or(value: float, fallback: float) -> float:
    return value if _finite(value) else fallback


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


# --- where the spread comes from ------------------------------------------------------------


def variance_rows(report: Report, measure: str = "aggregate") -> list[dict]:
    """Per model, each component's share of the variance of `measure` with its interval, as
    text ("undefined" where the run's design cannot tell the component apart)."""
    rows = report.variance.query("measure == @measure")
    return [
        {
            "model": model,
            "shares": [_share_text(row) for row in group.itertuples()],
            "n": f"{group['n_cases'].iloc[0]} cases, {group['n_conversations'].iloc[0]} "
            f"conversations, {group['n_judges'].iloc[0]} judges",
            "method": group["method"].iloc[0],
        }
        for model, group in rows.groupby("model", sort=False)
    ]


def _share_text(row) -> dict:
    if not _finite(row.share):
        return {"share": "undefined", "interval": ""}
    return {
        "share": f"{row.share:.0%}",
        "interval": f"[{row.share_low:.0%}, {row.share_high:.0%}]",
        "variance": f"{row.variance:.3f}",
    }


# --- per judge ----------------------------------------------------------------------------


def judge_scores(report: Report) -> pd.DataFrame:
    """Valid judge scores of complete conversations: conversation_id, rubric, judge, score."""
    rows = JudgeScore.objects.filter(
        job=report.job,
        status=ScoreStatus.VALID,
        conversation__jury_results__job=report.job,
        conversation__jury_results__complete=True,
    ).values_list("conversation_id", "rubric_version__rubric_id", "judge_model", "score")
    frame = pd.DataFrame.from_records(
        rows, columns=["conversation_id", "rubric", "judge", "score"]
    ).astype({"score": float})
    return frame.merge(report.conversations[["conversation_id", "model"]], on="conversation_id")


def judge_rows(report: Report, scores: pd.DataFrame) -> list[dict]:
    """Each judge's mean per rubric and aggregate, side by side within each model."""
    means = scores.groupby(["model", "judge", "rubric"])["score"].mean().unstack("rubric")
    aggregates = judge_aggregate_frame(scores, report.job.jury.weights).merge(
        report.conversations[["conversation_id", "model"]], on="conversation_id"
    )
    aggregate = aggregates.groupby(["model", "judge"])["aggregate"].mean()
    return [
        {
            "model": model,
            "scripted": model in report.scripted,
            "judge": judge,
            "aggregate": aggregate.loc[(model, judge)],
            "means": [means.loc[(model, judge)].get(rubric) for rubric in report.rubrics],
        }
        for model, judge in means.index
    ]


def agreement_rows(report: Report, scores: pd.DataFrame) -> list[dict]:
    """Inter-judge agreement per rubric; empty for a one-judge jury."""
    if scores["judge"].nunique() < 2:
        return []
    agreement = stats.inter_judge_agreement(scores)
    return [
        {"rubric": report.rubric_names[rubric], **agreement.loc[rubric].to_dict()}
        for rubric in report.rubrics
        if rubric in agreement.index
    ]


# --- failure explorer --------------------------------------------------------------------


def failure_filters(report: Report) -> dict[str, list[str]]:
    """The values each attribute takes in this run, for the filter selects."""
    entries = BenchmarkEntry.objects.filter(conversations__run=report.job.run)
    return {
        attribute: list(entries.order_by(attribute).values_list(attribute, flat=True).distinct())
        for attribute in ATTRIBUTES
    }


def lowest_scoring(report: Report, *, rubric: str, agent_id: str = "", filters: dict) -> list:
    """The lowest jury means on one rubric among complete conversations, with every judge's
    explanation attached as `.judgements`."""
    results = RubricResult.objects.filter(
        job=report.job,
        rubric_id=rubric,
        conversation__jury_results__job=report.job,
        conversation__jury_results__complete=True,
    )
    if agent_id:
        results = results.filter(conversation__run_agent_id=agent_id)
    for attribute, value in filters.items():
        results = results.filter(**{f"conversation__entry__{attribute}": value})
    lowest = list(
        results.select_related("conversation__run_agent", "conversation__entry").order_by(
            "mean", "conversation_id"
        )[:FAILURES_SHOWN]
    )
    judgements = JudgeScore.objects.filter(
        job=report.job,
        rubric_version__rubric_id=rubric,
        conversation_id__in=[result.conversation_id for result in lowest],
    ).order_by("judge_index")
    by_conversation: dict[int, list[JudgeScore]] = {}
    for judgement in judgements:
        by_conversation.setdefault(judgement.conversation_id, []).append(judgement)
    for result in lowest:
        result.judgements = by_conversation.get(result.conversation_id, [])
    return lowest
