"""Read-side helpers for benchmark pages: distribution reports, filtered lists, CSV."""

from __future__ import annotations

import pandas as pd
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, QueryDict

from benchmark import charts
from benchmark.engine.distribution_report import realised_shares
from benchmark.models import (
    BenchmarkEntry,
    BenchmarkSet,
    Conversation,
    ConversationStatus,
    Distribution,
    Run,
    Termination,
)
from benchmark.services.cases import distribution_spec
from common.query import query_choice

ATTRIBUTE_TITLES = {
    "condition": "Condition",
    "severity": "Severity",
    "task_category": "Task category",
    "task_subcategory": "Task subcategory",
    "age_group": "Age group",
    "sex": "Sex",
    "gender": "Gender",
    "gender_identity": "Gender identity (derived)",
    "care_preference": "Care preference",
    "personality": "Personality",
    "infeasible": "Infeasible by design",
    "eligibility": "Eligibility (infeasible by design)",
    "complexity": "Scenario complexity (from enrichment)",
}


def distribution_targets(distribution: Distribution) -> list[dict]:
    """The configured shares of every attribute value, grouped per attribute."""
    frame = realised_shares([], distribution_spec(distribution))
    return report_sections(frame, with_realised=False)


def realised_distribution(benchmark_set: BenchmarkSet) -> pd.DataFrame:
    """Target vs realised share of every attribute value (the paper's Table 2 shape)."""
    seeds = list(benchmark_set.entries.values_list("seed", flat=True))
    frame = realised_shares(seeds, distribution_spec(benchmark_set.distribution))
    return pd.concat([frame, _complexity_rows(benchmark_set)], ignore_index=True)


def _complexity_rows(benchmark_set: BenchmarkSet) -> pd.DataFrame:
    values = list(benchmark_set.entries.ready().values_list("complexity", flat=True))
    counts = pd.Series(values, dtype="object").value_counts()
    total = max(len(values), 1)
    return pd.DataFrame(
        {
            "attribute": "complexity",
            "value": counts.index,
            "target_share": float("nan"),
            "realised_share": counts.to_numpy() / total,
            "count": counts.to_numpy(),
            "difference": float("nan"),
        }
    )


def report_sections(frame: pd.DataFrame, *, with_realised: bool = True) -> list[dict]:
    sections = []
    for attribute, rows in frame.groupby("attribute", sort=False):
        rows = rows.sort_values(
            ["target_share", "value"], ascending=[False, True], na_position="last"
        )
        records = rows.to_dict("records")
        chart_rows = [
            (str(r["value"]), _share(r["target_share"]), _share(r["realised_share"]))
            for r in records
        ]
        title = ATTRIBUTE_TITLES.get(attribute, attribute)
        sections.append(
            {
                "attribute": attribute,
                "title": title,
                "rows": records,
                "chart": charts.paired_bars(chart_rows, title=title) if with_realised else "",
            }
        )
    return sections


def _share(value) -> float:
    return 0.0 if pd.isna(value) else float(value)


def filtered_entries(
    benchmark_set: BenchmarkSet, params: QueryDict
) -> tuple[QuerySet[BenchmarkEntry], list[dict]]:
    """Entries filtered by every attribute in the query string, plus the filter choices."""
    entries = benchmark_set.entries.all()
    filters = []
    for field in BenchmarkEntry.FILTER_FIELDS:
        # As text, so a yes/no column offers both and matches the submitted value. Without
        # order_by() the default ordering's columns would make DISTINCT repeat values.
        values = entries.order_by().values_list(field, flat=True).distinct()
        choices = sorted(str(value) for value in values if value != "")
        filters.append(
            {
                "field": field,
                "label": ATTRIBUTE_TITLES.get(field, field.title()),
                "choices": choices,
                "selected": query_choice(params, field, _allowed(field, choices)),
            }
        )
    chosen = {f["field"]: f["selected"] for f in filters if f["selected"]}
    return entries.filter(**chosen).order_by("index"), filters


def _allowed(field: str, present: list[str]) -> list[str]:
    """What the filter may ask for: the values present in the set, every value of a column
    with fixed choices (a live page filtered on *pending* keeps polling after the last pending
    entry finished) and both answers of a yes/no column."""
    column = BenchmarkEntry._meta.get_field(field)
    if isinstance(column, models.BooleanField):
        return ["True", "False"]
    return [str(value) for value, _ in column.choices] if column.choices else present


def filtered_conversations(run: Run, params: QueryDict) -> QuerySet[Conversation]:
    conversations = run.conversations.select_related("run_agent", "entry").order_by(
        "entry__index", "run_agent_id", "repetition"
    )
    choices = {
        "status": ConversationStatus.values,
        "termination_reason": Termination.values,
        "agent": run.agents.values_list("pk", flat=True),
    }
    for name, allowed in choices.items():
        if value := query_choice(params, name, allowed):
            field = "run_agent_id" if name == "agent" else name
            conversations = conversations.filter(**{field: value})
    return conversations


def query_without_page(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("fragment", None)
    return query.urlencode()
