"""The scoring page's forecast panel and score_run --dry-run."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from jury.models import JudgeScore, ScoringJob
from jury.services import forecasts
from jury.services.rubrics import current_versions

pytestmark = pytest.mark.django_db


def test_the_scoring_page_asks_for_the_panel(researcher_client, played_run):
    page = researcher_client.get(reverse("jury:score_run", args=[played_run.pk])).content.decode()
    assert f'hx-get="{reverse("jury:score_forecast", args=[played_run.pk])}"' in page


def test_the_panel_shows_each_judge_seat(researcher_client, scored_job):
    url = reverse("jury:score_forecast", args=[scored_job.run_id])
    page = researcher_client.get(url, {"jury": scored_job.jury_id}).content.decode()
    assert "judge 1" in page and "judge 2" in page and "Total cost" in page
    assert f"scoring job {scored_job.pk} of the same run" in page


def test_score_run_dry_run_prints_the_forecast_and_creates_nothing(played_run, offline_jury):
    before = (ScoringJob.objects.count(), JudgeScore.objects.count())
    out = StringIO()
    call_command(
        "score_run", str(played_run.pk), "--jury", str(offline_jury.pk), "--dry-run", stdout=out
    )
    assert (ScoringJob.objects.count(), JudgeScore.objects.count()) == before
    assert "judge 1" in out.getvalue() and "total cost:" in out.getvalue()


def _dry_run(run, jury) -> str:
    out = StringIO()
    call_command("score_run", str(run.pk), "--jury", str(jury.pk), "--dry-run", stdout=out)
    return out.getvalue()


def test_score_run_dry_run_with_no_earlier_job_says_it_rests_on_nothing(played_run, offline_jury):
    ScoringJob.objects.all().delete()  # the world's jobs: none is left to forecast from
    assert forecasts.scoring_source(played_run)[0] is None
    text = _dry_run(played_run, offline_jury)
    scores = played_run.conversations.scorable().count() * len(current_versions(judged_only=True))
    assert text.startswith("This forecast rests on no earlier calls")
    assert f"({scores:,} per judge seat" in text
    assert "total cost: unknown (no earlier calls to forecast from)" in text


def test_score_run_dry_run_from_an_earlier_job_names_it(scored_job, offline_jury):
    text = _dry_run(scored_job.run, offline_jury)
    assert "rests on no earlier calls" not in text
    assert f"from: scoring job {scored_job.pk} of the same run" in text
