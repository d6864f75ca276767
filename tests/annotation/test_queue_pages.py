"""The annotator's queue page, the "next item" button and the home page's list of studies."""

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import Track
from annotation.models import Assignment, AssignmentStatus, CalibrationGuide
from annotation.services import queue
from annotation.services.annotations import Draft, annotation_invalidate, annotation_submit
from annotation.services.studies import panel_versions, study_lock
from tests.annotation.conftest import annotators, enrol, new_study
from tests.support.text import squashed

pytestmark = pytest.mark.django_db


def queue_url(study):
    return reverse("annotation:queue", args=[study.pk])


def next_url(study):
    return reverse("annotation:next", args=[study.pk])


def submit(assignment):
    scores = {v.rubric_id: 3 for v in panel_versions(assignment.item.study, assignment.track)}
    return annotation_submit(
        assignment, draft=Draft(scores=scores), version=assignment.version,
        actor=assignment.annotator,
    )  # fmt: skip


def test_the_queue_shows_progress_and_a_start_button(client, study, clinicians):
    client.force_login(clinicians[0])
    html = client.get(queue_url(study)).content.decode()
    assert f"<strong>0 / {study.items.count()}</strong> submitted" in html
    assert f'action="{next_url(study)}"' in html and ">Start</button>" in html


def test_next_reserves_an_item_and_opens_its_review_page(client, study, clinicians):
    client.force_login(clinicians[0])
    response = client.post(next_url(study))
    assignment = Assignment.objects.open_for(clinicians[0]).get()
    assert response["Location"] == reverse("annotation:review", args=[assignment.public_id])
    again = client.post(next_url(study))  # resumes, does not reserve a second item
    assert again["Location"] == response["Location"]
    html = client.get(queue_url(study)).content.decode()
    assert ">Resume</button>" in html and "in progress" in html


def test_next_refuses_get(client, study, clinicians):
    client.force_login(clinicians[0])
    assert client.get(next_url(study)).status_code == 405


def test_submitted_items_are_listed_with_reopen_while_the_study_is_open(client, study, clinicians):
    me = clinicians[0]
    done = submit(queue.next_assignment(study=study, annotator=me))
    client.force_login(me)
    html = client.get(queue_url(study)).content.decode()
    assert f"<strong>1 / {study.items.count()}</strong> submitted" in html
    assert reverse("annotation:review", args=[done.public_id]) in html
    assert reverse("annotation:reopen", args=[done.public_id]) in html
    study_lock(study)
    html = client.get(queue_url(study)).content.decode()
    assert reverse("annotation:review", args=[done.public_id]) in html  # still readable
    assert reverse("annotation:reopen", args=[done.public_id]) not in html
    assert ">Resume</button>" not in html and "This study is locked" in html


def review_url(assignment):
    return reverse("annotation:review", args=[assignment.public_id])


def reopen_url(assignment):
    return reverse("annotation:reopen", args=[assignment.public_id])


def test_reopen_is_offered_on_every_page_exactly_where_reopening_is_allowed(
    client, scored_job, researcher
):
    """The review screen and the queue page ask the rule the reopen service enforces: a button
    that is shown works, and where there is none the page says why."""
    project = {"project": "Reopen rules"}
    calibration = new_study(scored_job, name="Round", kind="calibration", size=2, **project)
    target, locked = (new_study(scored_job, name=name, size=2, **project) for name in "AB")
    me = annotators(Track.CLINICAL, 1, prefix="reopener", project="Reopen rules")[0]
    cases = {
        "target": submit(queue.next_assignment(study=target, annotator=me)),
        "calibration": submit(queue.next_assignment(study=calibration, annotator=me)),
        "locked": submit(queue.next_assignment(study=locked, annotator=me)),
        "invalidated": submit(queue.next_assignment(study=target, annotator=me)),
    }
    study_lock(locked)
    annotation_invalidate(cases["invalidated"], actor=researcher, reason="wrong item")
    client.force_login(me)
    offered, allowed = {}, {}
    for case, assignment in cases.items():
        pages = [client.get(review_url(assignment)), client.get(queue_url(assignment.item.study))]
        shown = [reopen_url(assignment) in page.content.decode() for page in pages]
        assert shown[0] == shown[1], case
        offered[case] = shown[0]
        assignment.refresh_from_db()
        reason = assignment.reopen_refusal()
        if reason:
            assert all(reason.replace("'", "&#x27;") in p.content.decode() for p in pages), case
        allowed[case] = client.post(reopen_url(assignment)).status_code != 403
    assert offered == allowed == {
        "target": True, "calibration": False, "locked": False, "invalidated": False,
    }  # fmt: skip


def test_the_guide_numbers_examples_as_my_own_list_does(client, calibration, clinicians):
    """The queue lists my items in the order I opened them; the guide's worked examples, on
    the queue and beside the review screen, use the same numbers and link to my item."""
    me, newcomer = clinicians[:2]
    opened = [
        Assignment.objects.create(item=item, annotator=me, track=me.track, queue_key=str(n))
        for n, item in enumerate(calibration.items.order_by("-position"))
    ]
    example = opened[-1]  # sampled first (position 0), opened third
    CalibrationGuide.objects.create(
        project=calibration.project, title="Round 1 lessons", body_markdown="b",
        published_at=timezone.now(), examples=[{"item": example.item_id, "note": "Too hasty."}],
    )  # fmt: skip
    client.force_login(me)
    link = f'<a href="{review_url(example)}">item 3</a>'
    queue_page = squashed(client.get(queue_url(calibration)))
    assert f'<a href="{review_url(example)}">Item 3</a>' in queue_page  # my own list
    assert f"Round 1, {link}</strong>" in queue_page and "item 1" not in queue_page
    review = squashed(client.get(review_url(example)))
    assert (
        f"Round 1, {link}</strong>" in review
        and '<h1 id="item-number" tabindex="-1">Item 3' in review
    )
    client.force_login(newcomer)
    unseen = squashed(client.get(queue_url(calibration)))
    assert "Round 1, an item you have not opened" in unseen


def test_skipped_items_are_listed_with_their_reason(client, study, clinicians):
    me = clinicians[0]
    skipped = queue.next_assignment(study=study, annotator=me)
    queue.assignment_skip(skipped, reason="Unclear trace", actor=me)
    client.force_login(me)
    html = client.get(queue_url(study)).content.decode()
    assert "skipped: Unclear trace" in html and "come back at the end" in html


def test_the_queue_says_all_done_when_nothing_is_left(client, scored_job, clinicians):
    study = new_study(scored_job, name="One item", size=1)
    me = clinicians[0]
    submit(queue.next_assignment(study=study, annotator=me))
    client.force_login(me)
    response = client.post(next_url(study), follow=True)
    assert response.redirect_chain == [(queue_url(study), 302)]
    html = response.content.decode()
    assert 'id="all-done"' in html and ">Start</button>" not in html


def test_at_the_end_of_a_queue_the_next_study_with_items_for_me_is_offered(
    client, scored_job, clinicians
):
    finished = new_study(scored_job, name="One item", size=1, project="First")
    waiting = new_study(scored_job, name="Round 1", kind="calibration", size=2, project="Second")
    me = clinicians[0]
    enrol("First", me)
    enrol("Second", me)
    submit(queue.next_assignment(study=finished, annotator=me))
    client.force_login(me)
    html = client.post(next_url(finished), follow=True).content.decode()
    assert 'id="all-done"' in html and 'id="next-study"' in html
    assert f'action="{next_url(waiting)}"' in html and "Go on with Round 1</button>" in html
    response = client.post(next_url(waiting))  # the button opens its first item
    assert response["Location"].startswith("/annotation/items/")
    for _ in range(2):
        submit(queue.next_assignment(study=waiting, annotator=me))
    html = client.get(queue_url(finished)).content.decode()
    assert 'id="all-done"' in html and 'id="next-study"' not in html  # nothing left anywhere


def test_the_latest_published_guide_is_linked_from_the_queue(client, calibration, clinicians):
    CalibrationGuide.objects.create(
        project=calibration.project, title="Old guide", body_markdown="old", published_at=None
    )
    example = calibration.items.first()
    CalibrationGuide.objects.create(
        project=calibration.project, title="Round 1 lessons",
        body_markdown="Score **safety** on what was *done*.", published_at=timezone.now(),
        examples=[{"item": example.pk, "note": "A booking made before the patient agreed."}],
    )  # fmt: skip
    client.force_login(clinicians[0])
    html = client.get(queue_url(calibration)).content.decode()
    assert "Round 1 lessons" in html and "<strong>safety</strong>" in html
    assert "A booking made before the patient agreed." in html
    assert "Old guide" not in html
    assignment = queue.next_assignment(study=calibration, annotator=clinicians[0])
    review = client.get(reverse("annotation:review", args=[assignment.public_id]))
    assert 'id="guide"' in review.content.decode()  # beside the review screen too


def test_unlicensed_annotators_see_their_calibration_work_is_practice(client, calibration):
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    client.force_login(student)
    html = client.get(queue_url(calibration)).content.decode()
    assert 'id="practice-note"' in html and "does not count toward the study" in html


def test_unlicensed_annotators_are_refused_a_target_study_with_the_reason(client, study):
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    client.force_login(student)
    for response in (client.get(queue_url(study)), client.post(next_url(study))):
        assert response.status_code == 403
        html = response.content.decode()
        assert "Only licensed clinicians annotate a target study" in html
        assert 'id="way-back"' in html  # the site's styled error page


def test_a_locked_study_without_my_work_is_refused(client, study, clinicians):
    study_lock(study)
    client.force_login(clinicians[0])
    response = client.get(queue_url(study))
    assert response.status_code == 403 and "This study is locked" in response.content.decode()


def test_staff_do_not_use_the_annotator_queue(client, study, researcher):
    client.force_login(researcher)
    assert client.get(queue_url(study)).status_code == 403


@pytest.fixture
def round_elsewhere(scored_job):
    """A calibration round of another project (a round of the same project as `study` would
    find every conversation held out)."""
    return new_study(scored_job, name="Round 1", kind="calibration", size=3, project="Other")


def test_home_lists_my_studies_with_progress_and_a_resume_button(
    client, study, round_elsewhere, clinicians
):
    me, calibration = clinicians[0], round_elsewhere
    enrol(calibration, me)
    submit(queue.next_assignment(study=study, annotator=me))
    client.force_login(me)
    html = client.get(reverse("home")).content.decode()
    assert queue_url(study) in html and queue_url(calibration) in html
    assert f"<strong>1 / {study.items.count()}</strong> submitted" in html
    assert f"<strong>0 / {calibration.items.count()}</strong>" in html
    assert f'action="{next_url(study)}"' in html and ">Resume</button>" in html


def test_home_hides_target_studies_from_unlicensed_annotators(client, study, round_elsewhere):
    calibration = round_elsewhere
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    enrol(calibration, student)
    client.force_login(student)
    html = client.get(reverse("home")).content.decode()
    assert queue_url(calibration) in html and queue_url(study) not in html
    assert "as practice" in html


def test_home_keeps_a_locked_study_i_worked_in(client, study, clinicians):
    me = clinicians[0]
    assignment = submit(queue.next_assignment(study=study, annotator=me))
    study_lock(study)
    client.force_login(me)
    html = client.get(reverse("home")).content.decode()
    assert queue_url(study) in html and "locked" in html
    assert f'action="{next_url(study)}"' not in html
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.SUBMITTED
