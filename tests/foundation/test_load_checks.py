"""The load script's own instruments: it reads the real review page and posts what htmx posts
(so its autosaves are the site's), and its lost-autosave check catches a lost write."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from accounts.models import Role, Track
from annotation.models import Assignment
from annotation.services import queue
from annotation.services.studies import panel_versions
from bench.load.review_form import PageError, htmx_headers, review_form, saved_version
from bench.load.verify import lost_autosaves, percentile, request_stats
from tests.annotation.conftest import enrol, new_study
from tests.conftest import make_user
from tests.jury.services.builders import (  # noqa: F401 - module-scoped scored run
    scored_job,
    world,
    world_job,
)

ID = "0b8f2c7e-9d41-4c1a-8e2f-5a6b7c8d9e0f"
AUTOSAVE_URL = f"/annotation/items/{ID}/autosave/"
URLENCODED = "application/x-www-form-urlencoded"


@pytest.fixture
def my_item(scored_job, client):  # noqa: F811 - the imported fixture
    me = make_user("load-reader", Role.ANNOTATOR, Track.CLINICAL)
    study = new_study(scored_job)
    enrol(study, me)
    assignment = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    return assignment


def test_it_reads_the_review_page_and_its_autosave_is_stored_as_sent(client, my_item):
    url = reverse("annotation:review", args=[my_item.public_id])
    form = review_form(client.get(url).content.decode())
    panel = [v.rubric_id for v in panel_versions(my_item.item.study, my_item.track)]
    assert form.rubric_ids == tuple(panel)
    assert (form.version, form.scores, form.complete) == (0, {}, False)

    changed = form.with_score(panel[0], 4, "asked about red flags").with_comment("Fine overall")
    headers = htmx_headers(changed, url, target="save-status", trigger="annotation-form")
    body = urlencode(changed.post_data())  # url-encoded, as a form
    answer = client.post(changed.autosave_url, body, URLENCODED, headers=headers)

    assert answer.status_code == 200
    assert saved_version(answer.content.decode()) == 1
    stored = Assignment.objects.get(pk=my_item.pk)
    assert {
        "scores": stored.scores,
        "feedback": stored.feedback,
        "event_links": stored.event_links,
        "overall_comment": stored.overall_comment,
    } == changed.draft()
    reread = review_form(client.get(url).content.decode())
    assert (reread.version, reread.scores, reread.overall_comment) == (
        1,
        {panel[0]: 4},
        "Fine overall",
    )


def test_it_refuses_a_page_that_is_not_an_editable_review_screen():
    with pytest.raises(PageError):
        review_form("<html><body><p>All done.</p></body></html>")


def _save(kind, scores, *, submit=False, comment=""):
    draft = {"scores": scores, "feedback": {}, "event_links": {}, "overall_comment": comment}
    return {"kind": kind, "assignment": AUTOSAVE_URL, "submit": submit, "draft": draft}


def _stored(scores, status="reserved", comment=""):
    row = {"scores": scores, "feedback": {}, "event_links": {}, "overall_comment": comment}
    return {ID: row | {"status": status}}


def test_an_acknowledged_save_the_database_holds_is_not_lost():
    saves = [_save("sent", {"a": 2}), _save("ack", {"a": 2})]
    assert lost_autosaves(saves, _stored({"a": 2})) == []


def test_an_acknowledged_score_the_database_does_not_hold_is_lost():
    saves = [_save("sent", {"a": 2, "b": 5}), _save("ack", {"a": 2, "b": 5})]
    lost = lost_autosaves(saves, _stored({"a": 2, "b": 3}))
    assert [(item.field, item.acknowledged, item.stored) for item in lost] == [("scores.b", 5, 3)]


def test_an_acknowledged_comment_and_submission_missing_afterwards_are_lost():
    saves = [_save("sent", {"a": 2}, submit=True, comment="ok"),
             _save("ack", {"a": 2}, submit=True, comment="ok")]  # fmt: skip
    lost = lost_autosaves(saves, _stored({"a": 2}))
    assert sorted(item.field for item in lost) == ["overall_comment", "status"]


def test_a_write_in_flight_at_the_end_may_have_landed():
    saves = [_save("sent", {"a": 2}), _save("ack", {"a": 2}), _save("sent", {"a": 4})]
    assert lost_autosaves(saves, _stored({"a": 4})) == []
    assert lost_autosaves(saves, _stored({"a": 2})) == []
    assert len(lost_autosaves(saves, _stored({"a": 1}))) == 1


def test_request_figures_keep_login_apart_and_count_errors():
    records = [{"name": "login", "ms": 900, "error": None}] + [
        {"name": "autosave", "ms": ms, "error": "expected 200, got 409" if ms == 50 else None}
        for ms in range(10, 101, 10)
    ]
    by_name = {row.name: row for row in request_stats(records)}
    assert (by_name["autosave"].count, by_name["autosave"].errors) == (10, 1)
    assert by_name["all but login"].max_ms == 100
    assert (by_name["autosave"].p50_ms, by_name["autosave"].p95_ms) == (50, 100)
    assert percentile([3, 1, 2], 0.5) == 2
