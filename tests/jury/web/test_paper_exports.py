"""The jury report's figures and tables for a paper: every LaTeX table with a caption, a label
and a width that fits the page (the 17-column model table split in two), and subgroup charts
that all share one x range with their intervals inside the axis."""

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from benchmark.charts import BAR_WIDTH, LABEL_WIDTH
from jury.services.reports import ATTRIBUTES, EXPORT_TABLES
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401
from tests.support.latex import latex_floats

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


def export(client, job, table: str, suffix: str) -> str:
    url = reverse("jury:report_export", args=[job.pk, table, suffix])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_seventeen_column_model_table_is_split_into_two_tables_that_fit(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    header = next(csv.reader(io.StringIO(export(researcher_client, scored_job, "models", "csv"))))
    assert len(header) == 17  # model, aggregate, 6 x (mean, pass rate), standing, n twice
    means, passes = latex_floats(export(researcher_client, scored_job, "models", "tex"))
    assert (means.columns, passes.columns) == (11, 9)
    assert means.label == f"tab:job-{scored_job.pk}-models-mean-scores"
    assert means.rows == passes.rows == 2  # one row per agent


def test_each_part_of_the_model_table_has_a_caption_saying_what_it_shows(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    means, passes = latex_floats(export(researcher_client, scored_job, "models", "tex"))
    assert means.caption.startswith("Mean scores per model") and "pass" not in means.caption
    assert passes.caption.startswith("Pass rates per model") and "Wilson" in passes.caption
    assert all(scored_job.run.name in f.caption for f in (means, passes))


def test_the_model_tables_give_each_model_its_conversations_and_cases(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    rows = list(csv.DictReader(io.StringIO(export(researcher_client, scored_job, "models", "csv"))))
    assert [(row["Conversations"], row["Cases"]) for row in rows] == [("4", "4")] * 2
    tex = export(researcher_client, scored_job, "models", "tex")
    headers = re.findall(r"\\toprule\n(.*?) \\\\\n", tex)
    assert [header.split(" & ")[1:3] for header in headers] == [["Conversations", "Cases"]] * 2


def test_every_report_table_in_latex_has_a_caption_naming_the_run_and_a_label(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    for table in EXPORT_TABLES:
        floats = latex_floats(export(researcher_client, scored_job, table, "tex"))
        assert all(scored_job.run.name in f.caption for f in floats), table
        assert all(f.label.startswith(f"tab:job-{scored_job.pk}-{table}") for f in floats)


def test_the_sensitivity_table_in_latex_fits_its_pages_with_readable_cells(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    rows = list(csv.DictReader(io.StringIO(export(researcher_client, scored_job, "sensitivity",
                                                  "csv"))))  # fmt: skip
    tex = export(researcher_client, scored_job, "sensitivity", "tex")
    floats = latex_floats(tex)  # each within a page
    assert len(floats) > 1 and sum(f.rows for f in floats) == len(rows) > 100
    cells = [line[: -len(r" \\")].split(" & ") for line in tex.splitlines()
             if line.endswith(r"\\") and " & n & " not in line]  # fmt: skip
    assert len(cells) == len(rows)
    number = r"-?\d+\.\d\d"
    figure = re.compile(rf"{number}( \[{number}, {number}\])?|n/a|\[{number}, {number}\]")
    for cell in cells:
        assert figure.fullmatch(cell[5]) and figure.fullmatch(cell[6]), cell
        assert cell[7] in {"above", "below", "no"}, cell
    assert "False" not in tex and "True" not in tex


FILE_STARTS = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<svg"}


def test_the_report_offers_each_figure_as_png_pdf_and_svg_the_same_each_time(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    for kind in ("aggregates", "pass-rates"):
        assert f'id="figure-{kind}"' in page
        for fmt, start in FILE_STARTS.items():
            url = reverse("jury:report_figure", args=[scored_job.pk, kind, fmt])
            assert f'href="{url}"' in page
            first, again = researcher_client.get(url), researcher_client.get(url)
            assert first["Content-Disposition"] == (
                f'attachment; filename="job-{scored_job.pk}-{kind}.{fmt}"'
            )
            assert first.content.startswith(start) and first.content == again.content
            recorded = AuditEvent.objects.filter(action="download.figure").latest("pk")
            assert recorded.after["file"] == f"job-{scored_job.pk}-{kind}.{fmt}"


@pytest.mark.parametrize("measure", ["aggregate", "clinical_safety"])
def test_each_subgroup_chart_downloads_for_a_paper(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
    measure,
):
    page = researcher_client.get(
        reverse("jury:sensitivity", args=[scored_job.pk]), {"measure": measure}
    ).content.decode()
    for attribute in ATTRIBUTES:
        for fmt, start in FILE_STARTS.items():
            url = reverse("jury:sensitivity_figure", args=[scored_job.pk, attribute, fmt])
            assert f'href="{url}?measure={measure}"' in page
            response = researcher_client.get(url, {"measure": measure})
            assert response.content.startswith(start)
            assert response["Content-Disposition"].endswith(f'-{measure}-{attribute}.{fmt}"')


def test_a_report_without_complete_conversations_offers_no_figure(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
):
    scored_job.pk = None  # a second job of the run, nothing scored yet
    scored_job.save()
    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    assert "figure-aggregates" not in page
    url = reverse("jury:report_figure", args=[scored_job.pk, "aggregates", "png"])
    assert researcher_client.get(url).status_code == 404


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
