"""The study report's files through the API: each rubric's figures, the drift table and the
project's trend figures are the files the report pages download, byte for byte, under the same
filters, recorded in the audit trail; the list of files names addresses that answer."""

import pytest
from django.urls import resolve, reverse

from accounts.models import Track
from alignment.services.frames import study_rubrics
from audit.models import AuditEvent
from tests.alignment.conftest import (  # noqa: F401 - fixtures
    annotate_study,
    annotated_study,
    people,
    scored_job,
    world,
    world_job,
)
from tests.annotation.conftest import new_study
from tests.support.api import API

pytestmark = pytest.mark.django_db


def _judged(study) -> str:
    """A judged rubric of the clinical track (the filter the tests use)."""
    rubrics = study_rubrics(study)
    return next(r.rubric_id for r in rubrics if r.judged and r.track == Track.CLINICAL)


def test_a_rubric_figure_is_the_report_pages_file(researcher_client, annotated_study):  # noqa: F811
    rubric = _judged(annotated_study)
    api = researcher_client.get(
        f"{API}/studies/{annotated_study.pk}/figures/{rubric}/scatter.svg",
        {"track": Track.CLINICAL},
    )
    assert api.status_code == 200, api.content
    page = researcher_client.get(
        reverse("alignment:figure", args=[annotated_study.pk, rubric, "scatter", "svg"]),
        {"track": Track.CLINICAL},
    )
    assert api.content == page.content and api["Content-Type"] == "image/svg+xml"
    assert b"/alignment/" not in api.content  # a download links nowhere on this site
    png = researcher_client.get(f"{API}/studies/{annotated_study.pk}/figures/{rubric}/bias.png")
    assert png.content.startswith(b"\x89PNG")
    assert AuditEvent.objects.filter(action="download.figure").count() >= 2


@pytest.mark.parametrize(
    ("tail", "query", "status"),
    [
        ("{rubric}/heatmap.svg", {}, 404),
        ("{rubric}/scatter.gif", {}, 404),
        ("no_such_rubric/scatter.svg", {}, 404),
        ("{rubric}/scatter.svg", {"track": "surgical"}, 400),
        ("{rubric}/scatter.svg", {"colour": "red"}, 400),
    ],
)
def test_a_figure_not_offered_is_a_problem(researcher_client, annotated_study, tail, query, status):  # noqa: F811
    path = f"{API}/studies/{annotated_study.pk}/figures/" + tail.format(
        rubric=_judged(annotated_study)
    )
    answer = researcher_client.get(path, query)
    assert answer.status_code == status and answer["Content-Type"] == "application/problem+json"


def test_the_drift_table_downloads_as_on_the_report_page(researcher_client, annotated_study):  # noqa: F811
    for fmt, marker in (("csv", b","), ("md", b"|"), ("tex", b"\\begin{tabular}")):
        answer = researcher_client.get(f"{API}/studies/{annotated_study.pk}/drift.{fmt}")
        assert answer.status_code == 200 and marker in answer.content
    page = researcher_client.get(
        reverse("alignment:drift_export", args=[annotated_study.pk, "csv"])
    )
    api = researcher_client.get(f"{API}/studies/{annotated_study.pk}/drift.csv")
    assert api.content == page.content


def test_the_jury_tables_of_closing_the_loop_are_the_pages_files(
    researcher_client,
    annotated_study,  # noqa: F811
):
    study = annotated_study.pk
    history = researcher_client.get(f"{API}/studies/{study}/jury-history.tex")
    assert history.status_code == 200 and b"\\begin{tabular}" in history.content
    page = researcher_client.get(reverse("alignment:jury_history_export", args=[study, "tex"]))
    assert history.content == page.content
    juries = researcher_client.get(f"{API}/studies/{study}/juries.csv")
    assert juries.status_code == 200
    assert (
        juries.content
        == researcher_client.get(reverse("alignment:loop_comparison_csv", args=[study])).content
    )
    unknown = researcher_client.get(f"{API}/studies/{study}/juries.csv", {"baseline": "nobody"})
    assert (
        unknown.status_code == 400 and unknown.json()["errors"][0]["location"] == "query.baseline"
    )


def test_the_trend_figure_says_why_until_a_round_has_data_then_draws(
    researcher_client,
    scored_job,  # noqa: F811
    people,  # noqa: F811
):
    target = new_study(scored_job, name="Target", size=2)
    path = f"{API}/projects/{target.project_id}/trend/rubrics.svg"
    empty = researcher_client.get(path)
    assert empty.status_code == 404 and "No chart of the rubrics yet" in empty.json()["detail"]
    round_one = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    annotate_study(round_one, scored_job, people)
    drawn = researcher_client.get(path, {"track": Track.CLINICAL})
    assert drawn.status_code == 200, drawn.content
    page = researcher_client.get(
        reverse("alignment:trend_figure", args=[target.project_id, "rubrics", "svg"]),
        {"track": Track.CLINICAL},
    )
    assert drawn.content == page.content


def test_the_list_of_files_names_addresses_of_this_api(researcher_client, annotated_study):  # noqa: F811
    answer = researcher_client.get(f"{API}/studies/{annotated_study.pk}/files")
    assert answer.status_code == 200
    files = answer.json()["files"]
    names = {(row["kind"], row["name"]) for row in files}
    assert {("table", "agreement"), ("table", "alt-test"), ("table", "drift")} <= names
    assert {("table", "jury-history"), ("table", "juries")} <= names
    assert {("figure", "scatter"), ("figure", "trend-rubrics"), ("export", "annotations")} <= names
    judged = [rubric.rubric_id for rubric in study_rubrics(annotated_study) if rubric.judged]
    assert {row["rubric"] for row in files if row["rubric"]} == set(judged)
    for path in (path for row in files for path in row["paths"]):
        assert resolve(path).url_name, path
    first_table = next(row for row in files if row["name"] == "weighted")["paths"][0]
    assert researcher_client.get(first_table).status_code == 200
