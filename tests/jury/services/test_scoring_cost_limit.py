"""Scoring jobs take a cost limit: refused beside an unpriced judge (named), accepted once the
judge has a price, a pause once the judges spent it, a resume with a higher limit; and the cost
of every judge shown with its calls, cached calls and unknown prices."""

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from jobs.models import JobStatus
from jury.models import ScoreStatus, ScoringJob
from jury.services import juries, scoring
from llm.services import prices

pytestmark = pytest.mark.django_db

UNPRICED = "openai-compatible/judge-7b"


@pytest.fixture
def mixed_jury(db):
    return juries.jury_create(name="Mixed", judges=["offline/standard", UNPRICED])


def set_price(model: str, figure: str) -> None:
    prices.price_set(model=model, input_per_million=Decimal(figure),
                     output_per_million=Decimal(figure))  # fmt: skip


def test_a_job_with_a_limit_and_an_unpriced_judge_is_refused_naming_it(played_run, mixed_jury):
    with pytest.raises(scoring.ScoringError, match=UNPRICED):
        scoring.scoring_launch(run=played_run, jury=mixed_jury, cost_limit_usd=Decimal("2"))
    assert not ScoringJob.objects.filter(jury=mixed_jury).exists()

    set_price(UNPRICED, "0.5")
    job = scoring.scoring_launch(run=played_run, jury=mixed_jury, cost_limit_usd=Decimal("2"))

    assert job.cost_limit_usd == Decimal("2")


def dispatch_and_judge(job, capture) -> int:
    """One dispatch, its judge calls executed here as the workers would; how many were sent."""
    sent: list = []

    def send(tasks):
        sent.extend(tasks)
        for score_id, token in tasks:
            scoring.judge_score_execute(score_id, token)

    with capture(execute=True):
        scoring.scoring_dispatch(job, send)
    return len(sent)


def test_the_limit_pauses_the_job_and_a_higher_limit_resumes_it(
    played_run, offline_jury, django_capture_on_commit_callbacks
):
    set_price("offline/standard", "1000")
    set_price("offline/lenient", "1000")
    job = scoring.scoring_launch(
        run=played_run, jury=offline_jury, use_cache=False, concurrency=2,
        cost_limit_usd=Decimal("0.01"),
    )  # fmt: skip

    assert dispatch_and_judge(job, django_capture_on_commit_callbacks) == 2
    assert dispatch_and_judge(job, django_capture_on_commit_callbacks) == 0
    job.refresh_from_db()
    assert job.status == JobStatus.PAUSED and "Cost limit reached" in job.stop_reason
    assert job.scores.filter(status=ScoreStatus.PENDING).count() == job.scores.count() - 2

    with pytest.raises(scoring.ScoringError, match="give a higher limit"):
        scoring.scoring_resume(job, cost_limit_usd=None)
    scoring.scoring_resume(job, cost_limit_usd=Decimal("10000"))
    assert dispatch_and_judge(job, django_capture_on_commit_callbacks) == 2


def test_the_score_run_command_refuses_a_limit_beside_an_unpriced_judge(played_run, mixed_jury):
    with pytest.raises(CommandError, match=UNPRICED):
        call_command("score_run", str(played_run.pk), "--jury", mixed_jury.name,
                     "--cost-limit", "3")  # fmt: skip

    call_command("score_run", str(played_run.pk), "--jury", mixed_jury.name, "--cost-limit", "3",
                 "--price", f"{UNPRICED}=0.2,0.6")  # fmt: skip

    job = ScoringJob.objects.get(jury=mixed_jury)
    assert job.cost_limit_usd == Decimal("3")
    assert prices.catalog_in_force().price_for(UNPRICED).output_per_million == Decimal("0.6")


# --- cost per judge ---------------------------------------------------------------------------


def judged(job, model: str, **fields) -> None:
    """Give every score of one judge model an outcome with these accounting fields."""
    job.scores.filter(judge_model=model).update(status=ScoreStatus.VALID, score=4, **fields)


def test_the_job_page_shows_each_judges_calls_tokens_and_cost_with_cached_and_unknown(
    researcher_client, played_run
):
    jury = juries.jury_create(name="Three", judges=["offline/standard", "offline/strict", UNPRICED])
    job = scoring.scoring_launch(run=played_run, jury=jury)
    judged(job, "offline/standard", calls=1, cached_calls=1, cost_usd=Decimal(0), cached=True)
    judged(job, "offline/strict", calls=2, cost_usd=Decimal("0.0125"), input_tokens=100)
    judged(job, UNPRICED, calls=1, cost_usd=None, input_tokens=50)

    rows = {row["model"]: row for row in scoring.judge_costs(job)}
    scores = job.scores.filter(judge_model="offline/strict").count()
    assert rows["offline/strict"]["calls"] == 2 * scores
    assert rows["offline/strict"]["cost"] == Decimal("0.0125") * scores
    assert rows[UNPRICED]["cost"] is None
    assert rows["offline/standard"]["cached"] == rows["offline/standard"]["calls"] == scores

    for url in (reverse("jury:job", args=[job.pk]), reverse("jury:judges", args=[job.pk])):
        table = researcher_client.get(url).content.decode().split('id="judge-costs"')[1]
        table = table.split("</table>")[0]
        standard, strict, unpriced = table.split("<tr>")[2:5]
        assert "offline/standard" in standard and ">cached<" in standard
        assert "$0.0000" not in standard
        assert f"${Decimal('0.0125') * scores:.4f}" in strict
        assert UNPRICED in unpriced and "unknown" in unpriced


def test_a_judge_call_counts_its_calls_and_cached_calls(played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=1)
    first = job.scores.order_by("pk").first()
    scoring.judge_score_execute(first.pk)
    again = scoring.scoring_launch(run=played_run, jury=offline_jury)
    twin = again.scores.get(
        conversation=first.conversation, rubric_version=first.rubric_version,
        judge_index=first.judge_index,
    )  # fmt: skip
    scoring.judge_score_execute(twin.pk)

    first.refresh_from_db()
    twin.refresh_from_db()
    assert first.calls >= 1 and twin.calls == twin.cached_calls == first.calls


# --- the pages ----------------------------------------------------------------------------------


def test_the_score_form_refuses_a_limit_beside_an_unpriced_judge(
    researcher_client, played_run, mixed_jury
):
    url = reverse("jury:score_run", kwargs={"run_id": played_run.pk})
    response = researcher_client.post(url, {"jury": mixed_jury.pk, "cost_limit_usd": "4"})

    assert response.status_code == 200
    assert UNPRICED in response.content.decode()
    assert not ScoringJob.objects.filter(jury=mixed_jury).exists()


def test_a_paused_job_resumes_from_its_page_with_a_higher_limit(researcher_client, played_run):
    job = scoring.scoring_launch(
        run=played_run, jury=juries.jury_demo_ensure(), cost_limit_usd=Decimal("1")
    )
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.PAUSED, stop_reason="Cost limit reached: $1.02 spent of $1.00."
    )
    page = researcher_client.get(reverse("jury:job", args=[job.pk])).content.decode()
    assert "Cost limit reached: $1.02 spent of $1.00." in page
    assert reverse("jury:job_resume", args=[job.pk]) in page

    researcher_client.post(reverse("jury:job_resume", args=[job.pk]), {"cost_limit": "8"})

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.cost_limit_usd == Decimal("8")
    assert job.stop_reason == ""
