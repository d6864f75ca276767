"""The jury's model report and its Table 4 view show each target study's clinician-corrected
scores beside the jury-only figures, and export them; without a study they say why not."""

import csv
import io

import pytest
from django.urls import reverse

from alignment.engine.ppi import MIN_ANNOTATED
from tests.alignment.conftest import OFFSETS, near_jury
from tests.annotation.conftest import new_study
from tests.annotation.staff_support import annotate
from tests.support.text import squashed

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_a_job_without_a_study_says_the_corrected_scores_are_undefined(
    researcher_client, scored_job
):
    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    assert 'id="no-corrected"' in page and "clinicians score a sample" in page
    assert "Show clinician-corrected scores" not in page


def test_the_report_shows_each_target_studys_corrected_scores(
    researcher_client, scored_job, annotated_study
):
    new_study(scored_job, name="Practice round", kind="calibration", size=2, project="Other")
    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    assert "<h3>Target study" in page and "Practice round" not in page.split("corrected-scores")[1]
    assert page.count('class="table compact corrected-table"') == 1
    assert "Clinician-corrected pass rate" in page


def test_the_table_4_view_puts_the_corrected_score_under_each_mean(
    researcher_client, scored_job, annotated_study
):
    url = reverse("jury:report", args=[scored_job.pk])
    plain = researcher_client.get(url).content.decode()
    assert "corrected-cell" not in plain and "Show clinician-corrected scores" in plain
    fragment = researcher_client.get(
        url + "?corrected=show&pass_rates=show&fragment=models", **HTMX
    )
    cells = squashed(fragment)
    assert cells.lstrip().startswith('<div id="model-table"')
    assert cells.count("corrected-cell") == 2 * 2 * 6  # 2 models x 6 rubrics, mean and pass rate
    assert "jury <span" in cells and "; clinician-corrected <span" in cells
    assert "Hide clinician-corrected scores" in cells


def test_the_corrected_table_exports_with_intervals_and_n(
    researcher_client, scored_job, annotated_study
):
    response = researcher_client.get(
        reverse("jury:report_export", args=[scored_job.pk, "corrected", "csv"])
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 2 * 6 and {r["Study"] for r in rows} == {"Target study"}
    first = rows[0]
    assert first["Population (N)"].isdigit() and first["Annotated (n)"].isdigit()
    assert "[" in first["Jury pass rate"] and "%" in first["Jury pass rate"]
    # The offline jury scores every conversation of the first model alike on the rubric: the
    # interval says so rather than print "4.50 [4.50, 4.50]".
    assert first["Jury mean"] == "4.50 (zero width: every conversation has the same value)"
    # A few annotated conversations per model: too few for a corrected figure, and it says so.
    assert int(first["Annotated (n)"]) < MIN_ANNOTATED
    assert first["Clinician-corrected mean"] == "undefined"
    assert f"a corrected figure needs at least {MIN_ANNOTATED}" in first["Notes"]
    tex = researcher_client.get(
        reverse("jury:report_export", args=[scored_job.pk, "corrected", "tex"])
    ).content.decode()
    assert f"tab:job-{scored_job.pk}-corrected" in tex


def test_one_annotated_conversation_shows_no_corrected_figure_and_names_the_minimum(
    researcher_client, scored_job, people
):
    # The independent check's case: one conversation of a model annotated. The corrected pass
    # rate read 196.7% and the mean 5.58 on the 1-5 scale, with no interval and no note.
    study = new_study(scored_job, size=8)
    first = study.items.order_by("position").select_related("conversation__run_agent").first()
    model = first.conversation.run_agent.label
    for item in study.items.exclude(conversation__run_agent__label=model) | study.items.filter(
        pk=first.pk
    ):
        for track, group in people.items():
            for offset, person in zip(OFFSETS, group, strict=False):
                annotate(item, person, scores=near_jury(scored_job, item, track, offset))
    page = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    table = page.split('id="corrected-scores"')[1].split("</table>")[0]
    rows = [row for row in table.split("<tr>")[2:] if f"<td>{model}</td>" in row]
    assert len(rows) == 6
    for row in rows:
        cells = row.split("<td")
        assert ">1</td>" in cells[4]  # n annotated
        for cell in (cells[6], cells[8]):  # clinician-corrected mean and pass rate
            assert "undefined" in cell
            assert (
                f"1 annotated conversation of this model on this rubric; a corrected figure "
                f"needs at least {MIN_ANNOTATED}" in cell
            )
    assert f"no corrected figure below {MIN_ANNOTATED} annotated conversations" in page
    exported = researcher_client.get(
        reverse("jury:report_export", args=[scored_job.pk, "corrected", "csv"])
    ).content.decode()
    own = [r for r in csv.DictReader(io.StringIO(exported)) if r["Model"] == model]
    assert {r["Clinician-corrected pass rate"] for r in own} == {"undefined"}
    assert all(f"needs at least {MIN_ANNOTATED}" in r["Notes"] for r in own)
