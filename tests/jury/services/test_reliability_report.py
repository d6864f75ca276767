"""pass^k where researchers read it: the report's figure and its downloads, the export table and
the API's, and `manage.py reliability_report` (a run with 3 repetitions, scored offline)."""

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from jury.engine.reliability import COLUMNS
from jury.services import juries
from tests.jury.services.builders import scored
from tests.support.builders import enriched_set, launched_run, played
from tests.support.text import squashed

pytestmark = pytest.mark.django_db
REPETITIONS = 3


@pytest.fixture
def repeated_job():
    cases = enriched_set(name="Repeated", size=2, sampler_seed=5)
    run = played(
        launched_run(cases, models=("offline/careful", "offline/careless"), repetitions=REPETITIONS)
    )
    return scored(run, juries.jury_demo_ensure())


def command_rows(*args) -> list[dict]:
    out, err = io.StringIO(), io.StringIO()
    call_command("reliability_report", *args, stdout=out, stderr=err)
    return list(csv.DictReader(io.StringIO(out.getvalue()))), err.getvalue()


def test_the_command_prints_a_row_per_model_measure_stratum_and_k(repeated_job):
    rows, warning = command_rows(str(repeated_job.run_id), "--format", "csv")

    assert list(rows[0]) == COLUMNS
    overall = [r for r in rows if r["measure"] == "aggregate" and r["stratum"] == "all"]
    assert sorted({r["k"] for r in overall}) == ["1", "2", "3"]
    assert len(overall) == 2 * REPETITIONS  # two models
    for row in overall:
        assert float(row["low"]) <= float(row["pass_hat_k"]) <= float(row["high"])
        assert row["n_cases"] == "2"
    assert any(r["stratum"].startswith("personality=") for r in rows)
    assert "3 repetition(s)" in warning and "at least 4" in warning


def test_the_command_names_a_run_without_a_finished_scoring_job():
    with pytest.raises(Exception, match="no finished scoring job"):
        command_rows("999999")


def test_the_report_shows_the_curve_and_the_api_serves_the_table(repeated_job, researcher_client):
    page = researcher_client.get(reverse("jury:report", args=[repeated_job.pk])).content.decode()
    assert 'id="figure-pass-k"' in page
    assert "at least 4 give a useful curve" in squashed(page)
    assert "its repetitions count as one cluster in every interval" in squashed(page)
    assert reverse("jury:report_export", args=[repeated_job.pk, "reliability", "csv"]) in page
    figure = researcher_client.get(
        reverse("jury:report_figure", args=[repeated_job.pk, "pass-k", "png"])
    )
    assert figure.status_code == 200 and figure.content.startswith(b"\x89PNG")
    table = researcher_client.get(f"/api/v1/scoring-jobs/{repeated_job.pk}/tables/reliability")
    assert table.status_code == 200, table.content
    assert "pass_hat_k" in table.content.decode()


@pytest.mark.parametrize("suffix", ["csv", "md", "tex"])
def test_the_table_downloads_in_every_format(repeated_job, researcher_client, suffix):
    url = reverse("jury:report_export", args=[repeated_job.pk, "reliability", suffix])
    response = researcher_client.get(url)
    assert response.status_code == 200
    assert "pass" in response.content.decode()
