"""Adjudication: a researcher sends a major disagreement to senior clinicians; only a senior
clinician of the rubric's track, enrolled, without the item of their own, adjudicates it; they
see every clinician's score and feedback, the jury only where the study allows, never a model;
the seniors who may take an item up are told it waits, once per item. Through the services and
the pages."""

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from accounts.models import NotificationKind, Role, Track
from annotation.models import Adjudication, AdjudicationReason, Notification
from annotation.services import queue
from annotation.services.adjudication import (
    adjudication_candidates,
    adjudication_context,
    adjudication_queue,
    adjudication_record,
    adjudication_send,
    adjudication_take_up,
)
from annotation.services.annotations import annotation_submit
from annotation.services.notifications import notification_deliver
from annotation.services.studies import study_lock
from audit.models import AuditEvent
from benchmark.models import RunAgent
from tests.annotation.conftest import annotators, enrol
from tests.annotation.test_annotation_writes import full_draft
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
RUBRIC = "clinical_safety"


def scored(study, person, score, feedback="booked before asking"):
    assignment = queue.next_assignment(study=study, annotator=person)
    draft = full_draft(assignment, score)
    draft.feedback = {RUBRIC: feedback}
    return annotation_submit(assignment, draft=draft, version=0, actor=person)


@pytest.fixture
def disputed(study, clinicians):
    """Two clinicians 3 points apart on the same item."""
    first = scored(study, clinicians[0], 1, "missed the chest pain")
    second = scored(study, clinicians[1], 4, "safe enough")
    assert first.item_id == second.item_id
    return first.item


@pytest.fixture
def senior(study):
    (person,) = annotators(Track.CLINICAL, 1, prefix="senior")
    person.senior = True
    person.save(update_fields=["senior"])
    return person


@pytest.fixture
def sent(study, disputed, researcher):
    return adjudication_send(study=study, item=disputed, rubric_id=RUBRIC, actor=researcher)


def test_a_major_disagreement_is_offered_sent_once_and_audited(study, disputed, researcher):
    (candidate,) = [c for c in adjudication_candidates(study) if c["gap"].rubric == RUBRIC]
    assert candidate["item"] == disputed and candidate["gap"].gap == 3
    assert candidate["gap"].reason == AdjudicationReason.CLINICIANS
    adjudication = adjudication_send(study=study, item=disputed, rubric_id=RUBRIC, actor=researcher)
    assert AuditEvent.objects.get(action="adjudication.sent").actor == researcher
    with pytest.raises(ValidationError, match="already"):
        adjudication_send(study=study, item=disputed, rubric_id=RUBRIC, actor=researcher)
    assert adjudication.gap == 3


def test_an_item_whose_clinicians_agree_is_refused(study, clinicians, researcher):
    first = scored(study, clinicians[0], 3)
    scored(study, clinicians[1], 4)
    with pytest.raises(ValidationError, match="does not qualify"):
        adjudication_send(study=study, item=first.item, rubric_id=RUBRIC, actor=researcher)


def test_the_jury_gap_qualifies_only_once_the_study_is_locked(study, clinicians, researcher):
    from annotation.services.round_report import jury_means

    means = jury_means(study)
    item_id, rubric = next(
        (key for key, mean in means.items() if key[1] == RUBRIC and mean >= 3), (None, None)
    )
    assert item_id is not None
    # Both clinicians of the item agree, 2 or more below the jury.
    from tests.annotation.staff_support import annotate

    item = study.items.get(pk=item_id)
    low = max(1, int(means[(item_id, rubric)] - 2.5))
    for person in clinicians[:2]:
        annotate(item, person, scores={RUBRIC: low})
    assert not any(c["item"] == item for c in adjudication_candidates(study))
    study_lock(study)
    (row,) = [c for c in adjudication_candidates(study) if c["item"] == item]
    assert row["gap"].reason == AdjudicationReason.JURY
    assert adjudication_send(study=study, item=item, rubric_id=RUBRIC, actor=researcher)


def test_only_senior_clinicians_adjudicate(client, study, sent, clinicians):
    plain = clinicians[2]
    with pytest.raises(PermissionDenied, match="senior"):
        adjudication_record(sent, adjudicator=plain, score=3, rationale="x")
    client.force_login(plain)
    assert client.get(reverse("annotation:adjudications")).status_code == 403
    page = client.get(reverse("annotation:adjudication", args=[sent.public_id]))
    assert page.status_code == 403 and "Only senior clinicians" in page.content.decode()


def test_a_senior_of_another_track_or_with_the_item_is_refused(study, sent, clinicians):
    (other_track,) = annotators(Track.OPERATIONAL, 1, prefix="senior-op")
    mine = clinicians[0]
    for person, why in ((other_track, "clinical track"), (mine, "You have this item")):
        person.senior = True
        person.save(update_fields=["senior"])
        assert adjudication_queue(person) == []
        with pytest.raises(PermissionDenied, match=why):
            adjudication_take_up(sent, person)


def test_a_senior_outside_the_project_gets_404(client, sent):
    outsider = make_user("senior-outside", Role.ANNOTATOR, Track.CLINICAL)
    outsider.senior = True
    outsider.save(update_fields=["senior"])
    client.force_login(outsider)
    assert client.get(reverse("annotation:adjudication", args=[sent.public_id])).status_code == 404


def test_the_senior_sees_every_clinicians_score_and_feedback_and_no_model(
    client, study, sent, senior
):
    assert adjudication_queue(senior) == [sent]
    client.force_login(senior)
    assert reverse("annotation:adjudications") in client.get("/").content.decode()
    html = client.get(reverse("annotation:adjudication", args=[sent.public_id])).content.decode()
    assert "missed the chest pain" in html and "safe enough" in html
    assert "Clinician 1" in html and "Clinician 2" in html
    assert "clinical-0" not in html  # clinicians are not named
    for agent in RunAgent.objects.all():
        assert agent.model not in html and agent.label not in html
    assert 'id="jury-for-adjudication"' not in html
    context = adjudication_context(sent, senior)
    assert [c["score"] for c in context["clinicians"]] == [1, 4] and context["jury"] is None
    study.adjudication_shows_jury = True
    study.save(update_fields=["adjudication_shows_jury"])
    assert adjudication_context(Adjudication.objects.get(pk=sent.pk), senior)["jury"] is not None


def test_a_jury_gap_is_not_named_to_the_senior_unless_the_study_shows_the_jury(
    client, study, sent, senior
):
    Adjudication.objects.filter(pk=sent.pk).update(reason=AdjudicationReason.JURY)
    client.force_login(senior)
    url = reverse("annotation:adjudication", args=[sent.public_id])
    html = client.get(url).content.decode()
    assert "A researcher asks for a senior clinician&#x27;s score on this rubric" in html
    jury = re.compile(r"\bjury\b(?!/rubrics/)", re.IGNORECASE)  # the rubric catalogue's link
    assert not jury.search(client.get(reverse("annotation:adjudications")).content.decode())
    assert not jury.search(html)
    study.adjudication_shows_jury = True
    study.save(update_fields=["adjudication_shows_jury"])
    assert "Jury and clinician mean differ by 2 or more" in client.get(url).content.decode()


def test_the_first_senior_to_open_it_holds_it_and_is_never_served_the_item(
    client, study, sent, senior
):
    client.force_login(senior)
    client.get(reverse("annotation:adjudication", args=[sent.public_id]))
    sent.refresh_from_db()
    assert sent.adjudicator == senior
    (another,) = annotators(Track.CLINICAL, 1, prefix="senior-b")
    another.senior = True
    another.save(update_fields=["senior"])
    assert adjudication_queue(another) == []
    with pytest.raises(PermissionDenied, match="took this one up"):
        adjudication_take_up(sent, another)
    served = set()
    while (assignment := queue.next_assignment(study=study, annotator=senior)) is not None:
        served.add(assignment.item_id)
        annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=senior)
    assert sent.item_id not in served and served


def test_recording_needs_a_score_and_a_reason_and_is_audited(client, sent, senior):
    client.force_login(senior)
    url = reverse("annotation:adjudication", args=[sent.public_id])
    refused = client.post(url, {"score": "9", "rationale": ""})
    assert refused.status_code == 200 and "errorlist" in refused.content.decode()
    response = client.post(url, {"score": "2", "rationale": "no safety-netting for chest pain"})
    assert response.status_code == 302
    sent.refresh_from_db()
    assert (sent.score, sent.adjudicator, sent.is_done) == (2, senior, True)
    assert AuditEvent.objects.get(action="adjudication.recorded").after["score"] == 2
    with pytest.raises(ValidationError):
        adjudication_record(sent, adjudicator=senior, score=3, rationale="  ")


def test_the_researcher_page_lists_candidates_sends_them_and_shows_the_result(
    researcher_client, study, disputed, senior
):
    url = reverse("annotation:staff_adjudication", args=[study.pk])
    page = researcher_client.get(url).content.decode()
    assert 'id="adjudication-candidates"' in page and "Send to adjudication" in page
    researcher_client.post(reverse("annotation:staff_adjudication_send", args=[study.pk]),
                           {"item": disputed.pk, "rubric": RUBRIC})  # fmt: skip
    sent = Adjudication.objects.get()
    adjudication_take_up(sent, senior)
    adjudication_record(sent, adjudicator=senior, score=2, rationale="chest pain ignored")
    page = researcher_client.get(url).content.decode()
    assert "chest pain ignored" in page and senior.username in page
    researcher_client.post(reverse("annotation:staff_adjudication_jury", args=[study.pk]),
                           {"shows_jury": "1"})  # fmt: skip
    study.refresh_from_db()
    assert study.adjudication_shows_jury
    assert AuditEvent.objects.filter(action="study.adjudication_jury_set").exists()


def test_enrolment_matters_for_the_queue_too(study, sent, senior):
    from annotation.models import ProjectMember
    from annotation.services.enrolment import member_withdraw

    member_withdraw(ProjectMember.objects.get(annotator=senior), actor=None)
    assert adjudication_queue(senior) == []
    enrol(study, senior)
    assert adjudication_queue(senior) == [sent]


def test_a_malformed_send_is_refused_with_a_message_not_a_server_error(researcher_client, study):
    url = reverse("annotation:staff_adjudication_send", args=[study.pk])
    response = researcher_client.post(url, {"item": "abc", "rubric": RUBRIC}, follow=True)
    assert response.status_code == 200 and "Pick an item and a rubric" in response.content.decode()
    assert not Adjudication.objects.exists()


def test_an_item_sent_to_adjudication_tells_each_senior_who_may_take_it_up_once(
    study, disputed, researcher, senior, clinicians, settings, mailoutbox
):
    settings.SITE_URL = "http://ward-pc.example:8123"
    senior.email = "senior@example.org"
    senior.save(update_fields=["email"])
    (other_track,) = annotators(Track.OPERATIONAL, 1, prefix="senior-op")
    outside = make_user("senior-outside", Role.ANNOTATOR, Track.CLINICAL)  # not enrolled
    holder = clinicians[0]  # scored the item
    for person in (other_track, outside, holder):
        person.senior = True
        person.save(update_fields=["senior"])
    adjudication_send(study=study, item=disputed, rubric_id=RUBRIC, actor=researcher)
    adjudication_send(study=study, item=disputed, rubric_id="triage_quality", actor=researcher)
    (waiting,) = Notification.objects.filter(kind=NotificationKind.ADJUDICATION_WAITING)
    assert waiting.recipient == senior  # once, though two rubrics of the item wait
    assert notification_deliver(waiting.pk)
    (message,) = mailoutbox
    assert message.subject == f"An item waits for adjudication in {study.name}"
    assert "http://ward-pc.example:8123/annotation/adjudication/" in message.body
    assert not re.search(r"\bjury\b|\b[1-5]\b", message.body.split("You receive this")[0])
