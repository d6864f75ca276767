"""A rubric's score has no batch mode (one leased task, no study for the batch glue to drive):
asking for one, on the page, the forecast or the API, is refused with the reason, never
silently judged live."""

import pytest
from django.urls import reverse

from rubric_lab.forms.generation import SCORE_BATCH_REFUSAL, InstanceScoreForm
from rubric_lab.models import InstanceScore
from rubric_lab.services import instance_scoring, pipeline
from tests.support.api import API

pytestmark = pytest.mark.django_db

JUDGE = "offline/standard"


@pytest.fixture
def rubric(played_run):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(conversations=[conversation], generator_model=JUDGE)
    generation = job.generations.get()
    pipeline.generation_execute(generation.pk)
    generation.refresh_from_db()
    return generation.rubric


def _form(rubric, **extra) -> InstanceScoreForm:
    data = {"conversation": str(rubric.conversation.public_id), "judge_model": JUDGE} | extra
    return InstanceScoreForm(data, conversations=instance_scoring.same_case_conversations(rubric))


@pytest.mark.parametrize("name", ["batch", "batch_resend_live"])
def test_the_score_form_refuses_a_batch_with_the_reason(rubric, name):
    form = _form(rubric, **{name: "on"})
    assert not form.is_valid()
    assert form.non_field_errors() == [SCORE_BATCH_REFUSAL]


def test_the_score_form_takes_a_live_score_and_batch_off(rubric):
    assert _form(rubric).is_valid()
    assert _form(rubric, batch=False, batch_resend_live="").is_valid()


def test_the_rubric_page_says_scores_are_live_and_refuses_a_batch_post(researcher_client, rubric):
    page = researcher_client.get(reverse("rubric_lab:rubric", args=[rubric.pk]))
    assert "Mode: live" in page.content.decode()
    response = researcher_client.post(
        reverse("rubric_lab:rubric_score", args=[rubric.pk]),
        {"conversation": str(rubric.conversation.public_id), "judge_model": JUDGE, "batch": "on"},
    )
    assert response.status_code == 400
    assert "has no batch mode" in response.content.decode()
    assert not InstanceScore.objects.exists()


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_api_refuses_a_batch_score_and_its_forecast_with_a_400(
    researcher_client, rubric, dry_run
):
    body = {"conversation": str(rubric.conversation.public_id), "judge_model": JUDGE}
    path = f"{API}/lab/rubrics/{rubric.pk}/scores"
    response = researcher_client.post(
        path, body | {"batch": True, "dry_run": dry_run}, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert "has no batch mode" in response.json()["detail"]
    assert not InstanceScore.objects.exists()
    live = researcher_client.post(path, body | {"batch": False}, content_type="application/json")
    assert live.status_code == 201, live.content
