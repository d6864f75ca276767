"""Calibration guides: markdown rendered safely, drafts and publishing, blinded examples."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, CalibrationGuide
from annotation.services import queue
from annotation.services.guides import (
    guide_examples,
    guide_publish,
    guide_render,
    guide_save,
    published_guide,
)
from annotation.services.studies import study_lock
from annotation.services.worklist import my_items
from audit.models import AuditEvent
from tests.annotation.conftest import new_study

pytestmark = pytest.mark.django_db

HOSTILE = (
    "# After round 1\n\nScore **safety** strictly.\n\n<script>alert('x')</script>\n\n"
    '<img src=x onerror="alert(1)">\n\n[click](javascript:alert(1))\n\n![pixel](https://t.example/p.png)'
)


def test_markdown_renders_but_raw_html_and_script_links_do_not():
    html = guide_render(CalibrationGuide(title="t", body_markdown=HOSTILE))
    assert "<h1>After round 1</h1>" in html and "<strong>safety</strong>" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and 'href="javascript' not in html
    # An image becomes a plain link: a guide never makes the browser fetch from elsewhere.
    assert '<a href="https://t.example/p.png">pixel</a>' in html


def test_the_published_guide_is_the_latest_published_one_of_the_project(calibration, researcher):
    older = guide_save(study=calibration, title="One", body_markdown="a", examples=[],
                       actor=researcher)  # fmt: skip
    newer = guide_save(study=calibration, title="Two", body_markdown="b", examples=[],
                       actor=researcher)  # fmt: skip
    draft = guide_save(study=calibration, title="Draft", body_markdown="c", examples=[],
                       actor=researcher)  # fmt: skip
    assert published_guide(calibration.project) is None
    guide_publish(older, now=timezone.now() - timezone.timedelta(days=1))
    guide_publish(newer)
    assert published_guide(calibration.project) == newer
    assert published_guide(calibration.project_id) == newer and draft.published_at is None


def test_a_guide_of_another_project_is_not_shown(calibration, scored_job, researcher):
    other = new_study(scored_job, name="Elsewhere round", kind="calibration", size=2,
                      project="Other")  # fmt: skip
    guide_publish(guide_save(study=other, title="Theirs", body_markdown="x", examples=[],
                             actor=researcher))  # fmt: skip
    assert published_guide(calibration.project) is None


def test_examples_must_be_items_of_the_round_and_carry_a_note(calibration, study, researcher):
    foreign = study.items.first()
    with pytest.raises(ValidationError, match="not an item"):
        guide_save(study=calibration, title="t", body_markdown="b", actor=researcher,
                   examples=[{"item": foreign.pk, "note": "look"}])  # fmt: skip
    with pytest.raises(ValidationError, match="needs a note"):
        guide_save(study=calibration, title="t", body_markdown="b", actor=researcher,
                   examples=[{"item": calibration.items.first().pk, "note": " "}])  # fmt: skip


def test_a_published_guide_is_frozen(calibration, researcher):
    guide = guide_publish(
        guide_save(study=calibration, title="t", body_markdown="b", examples=[], actor=researcher)
    )
    with pytest.raises(ValidationError, match="cannot change"):
        guide_save(study=calibration, title="t2", body_markdown="b", examples=[],
                   actor=researcher, guide=guide)  # fmt: skip


def opened_last_first(study, annotator) -> list[Assignment]:
    """The annotator opens the study's items in reverse sampling order (so their own numbers
    differ from the positions), one after another."""
    return [
        Assignment.objects.create(
            item=item, annotator=annotator, track=annotator.track, queue_key=str(n)
        )
        for n, item in enumerate(study.items.order_by("-position"))
    ]


def test_examples_are_numbered_as_the_annotator_numbers_their_own_items(
    calibration, researcher, clinicians
):
    me, newcomer = clinicians[:2]
    opened = opened_last_first(calibration, me)
    first_sampled = opened[-1].item  # position 0, the third item I opened
    example = {"item": first_sampled.pk, "note": "asked before booking"}
    guide = guide_save(study=calibration, title="t", body_markdown="b", actor=researcher,
                       examples=[example])  # fmt: skip
    (example,) = guide_examples(guide, annotator=me)
    assert set(example) == {"number", "public_id", "round", "condition", "request", "note"}
    mine = {row["public_id"]: row["number"] for row in my_items(calibration, me)["in_progress"]}
    assert example["number"] == mine[opened[-1].public_id] == 3
    assert example["public_id"] == opened[-1].public_id
    (unseen,) = guide_examples(guide, annotator=newcomer)  # never opened it: no number
    assert unseen["number"] is None and unseen["public_id"] is None
    (staff,) = guide_examples(guide, annotator=None)  # staff pages number by sampling order
    assert staff["number"] == first_sampled.position + 1 == 1


def test_examples_shown_to_annotators_carry_no_model_or_score(calibration, researcher, clinicians):
    item = calibration.items.first()
    guide = guide_save(study=calibration, title="t", body_markdown="b", actor=researcher,
                       examples=[{"item": item.pk, "note": "asked before booking"}])  # fmt: skip
    (example,) = guide_examples(guide, annotator=clinicians[0])
    assert example["note"] == "asked before booking"
    words = " ".join(str(v) for v in example.values()).lower()
    assert "offline" not in words and "careful" not in words and "careless" not in words


def test_a_researcher_writes_previews_and_publishes_a_guide(researcher_client, calibration):
    item = calibration.items.first()
    response = researcher_client.post(
        reverse("annotation:staff_guide_new", args=[calibration.pk]),
        {"title": "Round 1 lessons", "body_markdown": HOSTILE, f"note_{item.pk}": "good triage"},
    )
    guide = CalibrationGuide.objects.get(title="Round 1 lessons")
    assert response["Location"] == reverse("annotation:staff_guide", args=[guide.pk])
    assert guide.examples == [{"item": item.pk, "note": "good triage"}]
    draft = researcher_client.get(response["Location"]).content.decode()
    assert "<strong>safety</strong>" in draft and "<script>alert" not in draft
    researcher_client.post(reverse("annotation:staff_guide_publish", args=[guide.pk]))
    guide.refresh_from_db()
    assert guide.published_at is not None
    assert published_guide(calibration.project) == guide
    page = researcher_client.get(reverse("annotation:staff_guide", args=[guide.pk]))
    html = page.content.decode()
    assert "good triage" in html and "cannot be changed" not in html and "frozen" in html


# --- where annotators see the guide -----------------------------------------------------------


def annotator_pages(client, study, annotator) -> dict[str, str]:
    assignment = queue.next_assignment(study=study, annotator=annotator)
    client.force_login(annotator)
    return {
        "queue": client.get(reverse("annotation:queue", args=[study.pk])).content.decode(),
        "review": client.get(
            reverse("annotation:review", args=[assignment.public_id])
        ).content.decode(),
    }


@pytest.fixture
def published(calibration, researcher):
    item = calibration.items.first()
    example = [{"item": item.pk, "note": "asked first"}]
    guide = guide_save(
        study=calibration, title="Round 1 lessons", body_markdown="Be *strict*.",
        actor=researcher, examples=example,
    )  # fmt: skip
    return guide_publish(guide)


@pytest.fixture
def target(calibration, scored_job):
    """A target study of the round's project (the round's conversations are held out)."""
    return new_study(scored_job, size=4)


def test_a_calibration_round_shows_the_guide(client, calibration, published, clinicians):
    pages = annotator_pages(client, calibration, clinicians[0])
    assert all('id="guide"' in html and "Round 1 lessons" in html for html in pages.values())


def test_a_target_study_shows_the_guide_only_when_the_researcher_chooses(
    client, researcher_client, target, published, clinicians, researcher
):
    study = target
    assert not study.guide_in_target  # off by default
    pages = annotator_pages(client, study, clinicians[0])
    assert [name for name, html in pages.items() if "Round 1 lessons" in html] == []

    setting = reverse("annotation:staff_study_guide_setting", args=[study.pk])
    researcher_client.force_login(researcher)
    dashboard = researcher_client.get(reverse("annotation:staff_study", args=[study.pk]))
    assert "Not shown to the annotators of this study" in dashboard.content.decode()
    response = researcher_client.post(setting, {"shown": "1"})
    assert response["Location"] == reverse("annotation:staff_study", args=[study.pk])
    study.refresh_from_db()
    assert study.guide_in_target
    pages = annotator_pages(client, study, clinicians[0])
    assert all("Round 1 lessons" in html for html in pages.values())
    assert all("asked first" in html for html in pages.values())  # its examples, blinded

    researcher_client.force_login(researcher)
    researcher_client.post(setting, {"shown": "0"})
    study.refresh_from_db()
    assert not study.guide_in_target
    changes = AuditEvent.objects.filter(action="study.guide_shown").order_by("pk")
    assert [event.after for event in changes] == [
        {"guide_in_target": True}, {"guide_in_target": False}
    ]  # fmt: skip


def test_the_setting_is_refused_for_a_calibration_round_and_a_locked_study(
    researcher_client, calibration, target
):
    study = target
    study_lock(study)
    for refused in (calibration, study):
        url = reverse("annotation:staff_study_guide_setting", args=[refused.pk])
        response = researcher_client.post(url, {"shown": "1"}, follow=True)
        refused.refresh_from_db()
        assert not refused.guide_in_target
        assert "always shows" in response.content.decode() or "locked" in response.content.decode()
    assert researcher_client.post(url, {"shown": "maybe"}).status_code == 400
