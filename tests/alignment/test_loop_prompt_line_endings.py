"""A judge prompt posted by a browser (CRLF line endings, trailing spaces) that the researcher
left unchanged is the shipped prompt: the same cache and the same configuration; a real edit
is stored once, however the browser sent it."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.forms.rescoring import version_field
from alignment.services import rescoring as loop
from jury.models import ScoreStatus
from jury.services import scoring
from tests.alignment.loop_support import constructed_study, judged_versions

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def as_a_browser_posts(text: str) -> str:
    """CRLF line endings and the stray spaces a textarea edit leaves at line ends."""
    return "\r\n".join(f"{line}  " if line else line for line in text.split("\n"))


def variant() -> str:
    shipped = scoring.shipped_judge_template_text()
    return shipped.replace("<!-- user -->", "Be brief.\n\n<!-- user -->", 1)


def test_the_shipped_prompt_posted_with_crlf_and_trailing_spaces_is_the_shipped_one():
    shipped = scoring.shipped_judge_template_text()
    assert scoring.judge_template_check(as_a_browser_posts(shipped)) == ""
    assert scoring.judge_template_check(shipped.replace("\n", "\r")) == ""


def test_one_edit_posted_by_two_browsers_is_stored_as_one_text():
    unix = scoring.judge_template_check(variant())
    windows = scoring.judge_template_check(as_a_browser_posts(variant()))

    assert unix == windows != ""
    assert "\r" not in windows and "Be brief.\n" in windows


def test_a_rescore_posted_unchanged_by_a_browser_replays_the_cache_and_joins_the_original(
    researcher_client, scored_job
):
    study = constructed_study(scored_job, annotated_items=1)
    form = {
        "jury": str(scored_job.jury.pk),
        "judge_template": as_a_browser_posts(scoring.shipped_judge_template_text()),
        "use_cache": "on",
    }
    for version in judged_versions(study):
        form[version_field(version.rubric_id)] = str(version.pk)

    response = researcher_client.post(reverse("alignment:loop_rescore", args=[study.pk]), form)

    assert response.status_code == 302
    (job,) = loop.rescore_jobs(study)
    assert job.judge_template == ""
    rescore = job.scores.order_by("pk").first()
    scoring.judge_score_execute(rescore.pk, rescore.lease_token)  # the message a worker gets
    rescore.refresh_from_db()
    original = scored_job.scores.get(
        conversation=rescore.conversation, rubric_version=rescore.rubric_version,
        judge_index=rescore.judge_index,
    )  # fmt: skip
    assert rescore.status == ScoreStatus.VALID and rescore.cached
    assert rescore.prompt_hash == original.prompt_hash
    # A relaunch with the shipped text as stored on disk joins the browser's configuration.
    loop.study_rescore(
        study, jury=scored_job.jury, rubric_versions=judged_versions(study),
        judge_template=scoring.shipped_judge_template_text(),
    )  # fmt: skip
    _original, *rescores = loop.study_configurations(study)
    assert len(rescores) == 1 and len(rescores[0].jobs) == 2
    assert rescores[0].prompt_label == "shipped"
