"""The jury's model report and its Table 4 view show each target study's clinician-corrected
scores beside the jury-only figures, and export them; without a study they say why not."""

import csv
import io

import pytest
from django.urls import reverse

from tests.annotation.conftest import new_study

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
    cells = fragment.content.decode()
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
    assert "[" in first["Clinician-corrected mean"] and "%" in first["Jury pass rate"]
    tex = researcher_client.get(
        reverse("jury:report_export", args=[scored_job.pk, "corrected", "tex"])
    ).content.decode()
    assert f"tab:job-{scored_job.pk}-corrected" in tex
