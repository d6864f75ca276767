"""Figures and table files of a scoring job's report, juries and their versions, rubrics:
the report page's downloads and the jury pages' read-outs through the API."""

import pytest

from jury.models import Jury
from tests.support.api import API

pytestmark = pytest.mark.django_db


def test_a_report_figure_and_table_files_download_as_on_the_report_page(
    researcher_client, scored_run
):
    _, job = scored_run
    figure = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/figures/pass-rates.png")
    assert figure.status_code == 200 and figure.content.startswith(b"\x89PNG")
    latex = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/tables/models.tex")
    assert latex.status_code == 200 and b"\\begin{tabular}" in latex.content
    markdown = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/tables/comparison.md")
    assert markdown.status_code == 200 and b"|" in markdown.content
    typed = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/tables/comparison").json()
    row = typed["rows"][0]
    assert set(row["mean_difference"]) == {"estimate", "low", "high"}
    assert isinstance(row["p"], float)
    missing = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/figures/pie.svg")
    assert missing.status_code == 404 and "pass-rates" in missing.json()["detail"]


def test_juries_their_versions_and_rubrics_are_listed(researcher_client, scored_run):
    _, job = scored_run
    base = job.jury
    calibrated = Jury.objects.create(
        name="Calibrated", judges=base.judges, weights=base.weights, base=base, version=2
    )
    Jury.objects.create(  # a fold jury: it cross-fits a study and is no version
        name="Fold 1", judges=base.judges, weights=base.weights, base=base,
        version=Jury.FOLD_VERSION, learned_from={"purpose": "fold"},
    )  # fmt: skip
    juries = researcher_client.get(f"{API}/juries").json()["results"]
    assert {jury["name"] for jury in juries} >= {job.jury.name, "Calibrated"}
    versions = researcher_client.get(f"{API}/juries/{calibrated.pk}/versions").json()
    assert [(v["id"], v["version"]) for v in versions] == [(job.jury.pk, 1), (calibrated.pk, 2)]
    rubrics = researcher_client.get(f"{API}/rubrics").json()["results"]
    safety = next(r for r in rubrics if r["rubric"] == "clinical_safety")
    assert safety["code"] == "CS" and "clinical" in safety["text"].lower()
    detail = researcher_client.get(f"{API}/rubrics/{safety['id']}").json()
    assert detail == safety
