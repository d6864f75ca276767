"""The jury report's figures and tables for a paper: every LaTeX table with a caption, a label
and a width that fits the page (the 15-column model table split in two), and subgroup charts
that all share one x range with their intervals inside the axis."""

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from benchmark.charts import BAR_WIDTH, LABEL_WIDTH
from jury.services.reports import EXPORT_TABLES
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401
from tests.support.latex import latex_floats

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


def export(client, job, table: str, suffix: str) -> str:
    url = reverse("jury:report_export", args=[job.pk, table, suffix])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_fifteen_column_model_table_is_split_into_two_tables_that_fit(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    header = next(csv.reader(io.StringIO(export(researcher_client, scored_job, "models", "csv"))))
    assert len(header) == 15  # model, aggregate, 6 x (mean, pass rate), standing
    means, passes = latex_floats(export(researcher_client, scored_job, "models", "tex"))
    assert means.caption.endswith(": mean scores") and passes.caption.endswith(": pass rates")
    assert (means.columns, passes.columns) == (9, 7)
    assert means.label == f"tab:job-{scored_job.pk}-models-mean-scores"
    assert means.rows == passes.rows == 2  # one row per agent


def test_every_report_table_in_latex_has_a_caption_naming_the_run_and_a_label(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    for table in EXPORT_TABLES:
        floats = latex_floats(export(researcher_client, scored_job, table, "tex"))
        assert all(scored_job.run.name in f.caption for f in floats), table
        assert all(f.label.startswith(f"tab:job-{scored_job.pk}-{table}") for f in floats)


def charts(html: str) -> list[ET.Element]:
    return [ET.fromstring(svg) for svg in re.findall(r'<svg class="chart".*?</svg>', html, re.S)]


def ticks(chart: ET.Element) -> list[tuple[str, str]]:
    return [(e.text, e.get("x")) for e in chart.iter(f"{SVG}text") if e.get("fill") == "#5d6878"]


@pytest.mark.parametrize("measure", ["aggregate", "clinical_safety"])
def test_every_subgroup_chart_shares_one_x_range_with_intervals_inside_it(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
    measure,
):
    url = reverse("jury:sensitivity", args=[scored_job.pk]) + f"?measure={measure}"
    found = charts(researcher_client.get(url).content.decode())
    assert len(found) == 6 * 2  # six attributes x two agents
    assert len({tuple(ticks(chart)) for chart in found}) == 1
    for chart in found:
        for line in chart.iter(f"{SVG}line"):
            x1, x2 = float(line.get("x1")), float(line.get("x2"))
            assert LABEL_WIDTH <= x1 <= x2 <= LABEL_WIDTH + BAR_WIDTH
