"""The agreement table as CSV, Markdown and LaTeX: the paper's columns, intervals, notes."""

import csv
import io

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.engine.bootstrap import SAME_IN_EVERY_RESAMPLE, Estimate
from alignment.engine.bootstrap import estimate as bootstrap_estimate
from alignment.services.archive import readme
from alignment.services.archive.export import archive_file_name
from alignment.services.exports import agreement_export, estimate_text
from alignment.services.reports import study_report
from annotation.models import Assignment
from jury.models import RubricVersion
from tests.alignment.archive_support import archive_bytes, members
from tests.alignment.conftest import near_jury
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


def test_an_estimate_prints_with_its_interval_or_as_undefined():
    assert estimate_text(Estimate(0.84, 0.76, 0.91, 75, 300), "share") == "84% [76%, 91%]"
    assert estimate_text(Estimate(-0.5, -0.75, -0.25, 75, 300), "signed") == (
        "-0.50 [-0.75, -0.25]"
    )
    assert estimate_text(Estimate(None, None, None, 3, 3, undefined="one rater"), "number") == (
        "undefined"
    )


def test_a_zero_width_interval_prints_its_reason_not_its_bounds():
    # Printed as "4.50 [4.50, 4.50]" before: certainty where there is only no spread.
    figure = bootstrap_estimate(np.full(50, 4.5), n_items=12, n_ratings=24, reason="")
    assert estimate_text(figure, "number") == f"4.50 (zero width: {SAME_IN_EVERY_RESAMPLE})"
    one = bootstrap_estimate(np.full(50, 1.0), n_items=1, n_ratings=2, reason="")
    assert estimate_text(one, "share") == "100% (zero width: one conversation)"
    cut = Estimate(0.98, 0.95, 1.0, 60, 0, note="interval cut at the end of 0-100%")
    assert estimate_text(cut, "share", fine=True) == (
        "98.0% [95.0%, 100.0%] (interval cut at the end of 0-100%)"
    )


def test_the_csv_has_one_row_per_judged_rubric_in_the_papers_columns(annotated_study):
    text = agreement_export(
        study_report(annotated_study, resamples=50), "csv", study=annotated_study
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 6
    assert {"Rubric", "Conversations", "Ratings", "Jury-clinician adjacent", "Chance adjacent",
            "Human-human adjacent", "Mean signed diff (jury - clinician)", "Alpha (clinicians)",
            "Notes"} <= set(rows[0])  # fmt: skip
    # An interval, or (every conversation within a point here) why it has zero width.
    assert all(
        "[" in row["Jury-clinician adjacent"]
        or row["Jury-clinician adjacent"].endswith(f"(zero width: {SAME_IN_EVERY_RESAMPLE})")
        for row in rows
    )


def test_the_markdown_is_a_pipe_table_with_a_header_rule(annotated_study):
    lines = agreement_export(
        study_report(annotated_study, resamples=50), "md", study=annotated_study
    ).splitlines()
    assert len(lines) == 2 + 6
    assert set(lines[1].replace(" ", "").strip("|").split("|")) == {"---"}
    cells = {line.count(" | ") for line in lines}
    assert len(cells) == 1  # every row has the same number of cells
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines)


def test_the_latex_escapes_special_characters(annotated_study):
    RubricVersion.objects.filter(rubric_id="clinical_safety").update(name="Safety & triage_100%")
    text = agreement_export(
        study_report(annotated_study, resamples=50), "tex", study=annotated_study
    )
    assert r"Safety \& triage\_100\%" in text
    assert r"\begin{tabular}" in text and r"\bottomrule" in text
    assert "100% [" not in text  # percentages are escaped too


def test_undefined_figures_say_why_in_the_notes(scored_job):
    study = new_study(scored_job, size=8)
    (only,) = annotators("clinical", 1)
    for item in study.items.all():
        annotate(item, only, scores=near_jury(scored_job, item, "clinical", 0))
    rows = list(
        csv.DictReader(
            io.StringIO(agreement_export(study_report(study, resamples=20), "csv", study=study))
        )
    )
    safety = next(row for row in rows if row["Rubric"] == "Clinical Safety")
    assert safety["Human-human adjacent"] == "undefined"
    assert "Human-human adjacent:" in safety["Notes"]


def test_the_export_view_answers_each_format_and_refuses_others(researcher_client, annotated_study):
    url = reverse("alignment:export", args=[annotated_study.pk, "md"])
    response = researcher_client.get(url + "?track=clinical")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    assert "Clinical Safety" in response.content.decode()
    assert "Task Completion" not in response.content.decode()  # the track filter holds
    bad = reverse("alignment:export", args=[annotated_study.pk, "xlsx"])
    assert researcher_client.get(bad).status_code == 404


def exported(client, url: str) -> tuple[str, str]:
    response = client.get(url)
    assert response.status_code == 200, url
    return response["Content-Disposition"].split('filename="')[1].rstrip('"'), (
        response.content.decode()
    )


def table_urls(study) -> dict[str, str]:
    urls = {"agreement": reverse("alignment:export", args=[study.pk, "csv"])}
    urls |= {
        name: reverse("alignment:table_export", args=[study.pk, name, "csv"])
        for name in ("weighted", "alt-test", "corrected", "judge-bias", "annotators")
    }
    urls["drift"] = reverse("alignment:drift_export", args=[study.pk, "csv"])
    return urls


def test_every_table_counting_synthetic_ratings_says_so_in_its_name_top_and_rows(
    researcher_client, annotated_study
):
    Assignment.objects.filter(item__study=annotated_study, annotator__username="clinical-0").update(
        synthetic=True
    )
    for name, url in table_urls(annotated_study).items():
        file_name, text = exported(researcher_client, url + "?synthetic=1")
        assert file_name == f"study-{annotated_study.pk}-{name}-synthetic.csv"
        first, *rest = text.splitlines(keepends=True)
        assert first.startswith("# Includes scores of synthetic clinicians"), name
        rows = list(csv.DictReader(io.StringIO("".join(rest))))
        for row in rows:  # a row of one clinician is marked when they are synthetic
            person = row.get("Clinician") or row.get("Row", "rubric")
            expected = "yes" if person in ("clinical-0", "rubric") else "no"
            assert row["Synthetic clinicians"] == expected, (name, row)
    agreement = reverse("alignment:export", args=[annotated_study.pk, "md"])
    _, markdown = exported(researcher_client, agreement + "?synthetic=1")
    assert markdown.startswith("> Includes scores of synthetic clinicians")
    agreement = reverse("alignment:export", args=[annotated_study.pk, "tex"])
    _, latex = exported(researcher_client, agreement + "?synthetic=1")
    assert "Includes scores of synthetic clinicians" in latex.split(r"\caption{")[1]


def test_a_table_leaving_synthetic_ratings_out_carries_no_mark(researcher_client, annotated_study):
    Assignment.objects.filter(item__study=annotated_study, annotator__username="clinical-0").update(
        synthetic=True
    )
    file_name, text = exported(researcher_client, table_urls(annotated_study)["agreement"])
    assert file_name == f"study-{annotated_study.pk}-agreement.csv"
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["Synthetic clinicians"] for row in rows} == {"no"}


def test_the_archive_of_a_study_with_synthetic_work_says_so_in_its_name_and_readme(
    annotated_study,
):
    plain = archive_file_name(annotated_study)
    assert plain.endswith(".zip") and "synthetic" not in plain
    assert "synthetic clinicians" not in readme.text(with_usernames=False)
    Assignment.objects.filter(item__study=annotated_study, annotator__username="clinical-0").update(
        synthetic=True
    )
    assert archive_file_name(annotated_study).endswith("-synthetic.zip")
    text = members(archive_bytes(annotated_study))["README.txt"].decode()
    assert "This study holds work of synthetic clinicians" in text
