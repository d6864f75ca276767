"""manage.py score_run: the same launch as the web page, followed with a progress bar."""

import pytest
from django.core.management import CommandError, call_command

from jury import tasks
from jury.models import ScoringJob
from jury.services import scoring


def newest_job() -> ScoringJob:
    return ScoringJob.objects.latest("created_at")


@pytest.fixture
def inline_worker(monkeypatch):
    """Judge tasks run at once in this process, as a worker would run them."""
    monkeypatch.setattr(tasks.judge_score_task, "delay", tasks.judge_score_task)


@pytest.mark.django_db
def test_score_run_finds_the_jury_by_id_and_honours_no_cache(played_run, offline_jury):
    call_command("score_run", str(played_run.pk), "--jury", str(offline_jury.pk), "--no-cache")
    job = newest_job()
    assert job.jury == offline_jury and not job.use_cache
    assert len(scoring.pending_score_ids(job)) == 96


@pytest.mark.django_db
def test_score_run_sets_and_bounds_the_concurrency(played_run, offline_jury):
    call_command("score_run", str(played_run.pk), "--jury", offline_jury.name, "--concurrency", "8")
    assert newest_job().concurrency == 8
    with pytest.raises(CommandError, match="between 1 and 1024"):
        call_command(
            "score_run", str(played_run.pk), "--jury", offline_jury.name, "--concurrency", "0"
        )


@pytest.mark.django_db
def test_score_run_names_what_it_cannot_find(played_run):
    with pytest.raises(CommandError, match="no jury with id or name 'nobody'"):
        call_command("score_run", str(played_run.pk), "--jury", "nobody")
    with pytest.raises(CommandError, match="no run 999"):
        call_command("score_run", "999", "--jury", "nobody")


# Last in the module: a transactional test flushes the database (and the module's run) after.
@pytest.mark.django_db(transaction=True)  # so on_commit enqueues at once, as in a real command
def test_score_run_waits_for_every_judge_call_and_prints_the_summary(
    played_run, offline_jury, inline_worker, capsys
):
    call_command("score_run", str(played_run.pk), "--jury", offline_jury.name, "--wait")
    job = newest_job()
    progress = scoring.scoring_progress(job)
    assert progress["valid"] == progress["total"] == 96 and job.use_cache
    out = capsys.readouterr()
    assert f"Scoring job {job.pk}: 96 judge calls queued, 64 at a time." in out.out
    assert "96 valid, 0 invalid, 0 error" in out.out
    assert "96/96" in out.err  # the tqdm bar
