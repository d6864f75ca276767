"""The model table's standing against the best: a model whose aggregate prints as the best
one's is "best" too, never "indistinguishable" beside an identical figure."""

import pandas as pd
import pytest

from jury.services import reports
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


def with_a_twin_of_the_top_model(report: reports.Report) -> str:
    """Give the report a copy of its best model's conversations under another name."""
    top = reports.model_table(report).index[0]
    conversations, scores = report.conversations, report.rubric_scores
    offset = int(conversations["conversation_id"].max()) + 1
    twin = conversations[conversations["model"] == top]
    twin = twin.assign(model="twin", conversation_id=twin["conversation_id"] + offset)
    twin_scores = scores[scores["model"] == top]
    twin_scores = twin_scores.assign(
        model="twin", conversation_id=twin_scores["conversation_id"] + offset
    )
    report.__dict__["conversations"] = pd.concat([conversations, twin], ignore_index=True)
    report.__dict__["rubric_scores"] = pd.concat([scores, twin_scores], ignore_index=True)
    return top


def test_a_model_identical_to_the_best_is_best_too(scored_job):  # noqa: F811
    report = reports.Report(scored_job)
    top = with_a_twin_of_the_top_model(report)
    table = reports.model_export_table(report).set_index("Model")
    twin, best = table.loc["twin"], table.loc[report.label(top)]
    assert twin["Aggregate (95% CI)"] == best["Aggregate (95% CI)"]
    assert twin["Versus best (paired)"] == best["Versus best (paired)"] == "best"
    marks = reports.best_marks(report, reports.model_table(report))
    assert sorted(mark for mark in marks.values() if mark == "best") == ["best", "best"]
