"""The review screen: only my own items, my track's panel, the blinded case, autosave with its
conflict check, submit, skip, reopen, heartbeat, event links, calibration reveal, locked
studies. Django test client only; the keyboard is covered in tests/browser."""

from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from accounts.models import Role, Track
from annotation.models import Assignment, AssignmentStatus, HistoryKind
from annotation.services import queue
from annotation.services.annotations import Draft, annotation_submit
from annotation.services.studies import panel_versions, study_lock
from bench.load.review_form import htmx_headers, review_form
from benchmark.models import RunAgent, TraceEvent
from jury.models import JudgeScore
from jury.services.rubrics import current_versions, rubric_of
from tests.annotation.conftest import annotators, new_study
from tests.conftest import make_user
from tests.support.text import squashed

pytestmark = pytest.mark.django_db

CLINICAL_PANEL = ("clinical_safety", "triage_quality", "clinical_helpfulness")
REALISM = ("profile_realism", "conversation_realism")
URLENCODED = "application/x-www-form-urlencoded"


@pytest.fixture
def me(clinicians):
    return clinicians[0]


@pytest.fixture
def mine(study, me):
    return queue.next_assignment(study=study, annotator=me)


def page_url(assignment, name="review"):
    return reverse(f"annotation:{name}", args=[assignment.public_id])


def full_form(assignment, score=4, version=None, **extra) -> dict:
    rubric_ids = [v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)]
    data = {f"score-{rid}": str(score) for rid in rubric_ids}
    data["version"] = str(assignment.version if version is None else version)
    return data | extra


def autosave(client, assignment, data, htmx=True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(page_url(assignment, "autosave"), data, **headers)


def forbidden_strings() -> set[str]:
    strings = set()
    for agent in RunAgent.objects.select_related("agent_config"):
        strings |= {agent.model, agent.label, agent.agent_config.name}
    strings |= set(JudgeScore.objects.exclude(explanation="").values_list("explanation", flat=True))
    return {s for s in strings if len(s) > 6}


# --- who sees what -------------------------------------------------------------------------


def test_it_shows_my_item_with_profile_scenario_and_the_full_trace(client, me, mine):
    client.force_login(me)
    response = client.get(page_url(mine))
    assert response.status_code == 200
    html = response.content.decode()
    entry = mine.item.conversation.entry
    assert entry.profile["first_name"] in html and entry.condition in html
    events = list(mine.item.conversation.events.exclude(kind="reasoning"))
    assert all(f'id="{e.event_id}"' in html for e in events)
    assert '<details><summary class="small">arguments</summary>' in html  # tool calls fold


def test_write_actions_are_marked_in_the_trace(client, study, me):
    written = TraceEvent.objects.filter(
        conversation__study_items__study=study, kind="tool_call", tool_name="schedule_appointment"
    ).first()
    assert written is not None, "the scored run books appointments"
    item = study.items.get(conversation=written.conversation)
    assignment = Assignment.objects.create(item=item, annotator=me, track=me.track, queue_key="k")
    client.force_login(me)
    html = client.get(page_url(assignment)).content.decode()
    start = html.index(f'id="{written.event_id}"')
    assert 'class="event tool_call write' in html[start - 60 : start]
    assert '<span class="badge write">writes</span>' in html[start : start + 400]


def test_another_annotator_gets_404_as_if_the_item_did_not_exist(client, mine, clinicians):
    """Neither by URL nor with a well-formed form (right version, valid scores, a reason) can
    annotator B read or change A's draft, status or history."""
    before = Assignment.objects.values().get(pk=mine.pk)
    client.force_login(clinicians[1])
    form = {"version": mine.version, "score-clinical_safety": "1", "reason": "mine now",
            "overall_comment": "overwritten"}  # fmt: skip
    for name in ("review", "autosave", "submit", "skip", "reopen", "heartbeat"):
        response = client.get(page_url(mine, name)) if name == "review" else client.post(
            page_url(mine, name), form
        )  # fmt: skip
        assert response.status_code == 404, name
    assert Assignment.objects.values().get(pk=mine.pk) == before
    assert not mine.history.exists()


def test_staff_use_their_own_view_not_this_one(client, mine, researcher):
    client.force_login(researcher)
    assert client.get(page_url(mine)).status_code == 403


def test_the_panel_holds_my_track_and_the_realism_rubrics_only(client, me, mine, operators):
    client.force_login(me)
    html = client.get(page_url(mine)).content.decode()
    for rubric_id in CLINICAL_PANEL + REALISM:
        assert f'name="score-{rubric_id}"' in html
    for rubric_id in ("task_completion", "workflow_accuracy", "conversational_quality"):
        assert rubric_id not in html
    operator_item = queue.next_assignment(study=mine.item.study, annotator=operators[0])
    client.force_login(operators[0])
    html = client.get(page_url(operator_item)).content.decode()
    assert 'name="score-task_completion"' in html and "clinical_safety" not in html


def test_each_rubric_has_five_choices_each_beside_its_level_definition(client, me, mine):
    """The definitions are on the page beside their buttons (the highlighted rubric shows
    them; see tests/browser), each button described by its level's text."""
    client.force_login(me)
    html = client.get(page_url(mine)).content.decode()
    section = html[html.index('id="rubric-clinical_safety"') :]
    section = section[: section.index("</fieldset>")]
    assert section.count('type="radio"') == 5
    assert "What this rubric judges · sub-dimensions" in section
    (version,) = [v for v in current_versions() if v.rubric_id == "clinical_safety"]
    for level in rubric_of(version).levels:
        described = f'aria-describedby="level-clinical_safety-{level.score}"'
        text = f'<p class="level-text" id="level-clinical_safety-{level.score}">'
        assert described in section and f"{text}{escape(level.description)}</p>" in section


def test_the_page_and_its_fragments_name_no_model_and_no_judge(client, me, mine):
    client.force_login(me)
    pages = [
        client.get(page_url(mine)).content.decode(),
        autosave(client, mine, {"score-clinical_safety": "2", "version": "0"}).content.decode(),
        autosave(client, mine, {"score-clinical_safety": "3", "version": "0"}).content.decode(),
    ]
    secrets = forbidden_strings()
    assert "offline/careless" in secrets or "offline/careful" in secrets
    assert [s for s in secrets for page in pages if s in page] == []


# --- autosave ------------------------------------------------------------------------------


def test_autosave_stores_the_draft_and_the_page_restores_it(client, me, mine):
    client.force_login(me)
    event_id = mine.item.conversation.events.first().event_id
    response = autosave(
        client, mine,
        {"score-clinical_safety": "2", "feedback-clinical_safety": "Booked before confirming.",
         "links-clinical_safety": event_id, "overall_comment": "Mostly fine.", "version": "0"},
    )  # fmt: skip
    assert response.status_code == 200
    fragment = response.content.decode()
    assert 'id="version" value="1" hx-swap-oob="true"' in fragment
    assert f'href="#{event_id}"' in fragment and "Saved" in fragment
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2} and mine.event_links == {
        "clinical_safety": [event_id]
    }
    html = client.get(page_url(mine)).content.decode()  # a reload, or another device
    assert 'name="score-clinical_safety" value="2" checked' in html
    assert "Booked before confirming.</textarea>" in html and "Mostly fine.</textarea>" in html
    assert f'name="links-clinical_safety" value="{event_id}"' in html
    assert 'id="version" value="1"' in html


def test_autosave_lists_what_is_still_missing(client, me, mine):
    client.force_login(me)
    fragment = autosave(client, mine, {"score-clinical_safety": "2", "version": "0"})
    text = fragment.content.decode()
    assert 'id="missing"' in text and "<li>Triage Quality</li>" in text
    assert "Clinical Safety</li>" not in text


def test_a_stale_tab_gets_409_its_values_shown_and_nothing_overwritten(client, me, mine):
    client.force_login(me)
    assert autosave(client, mine, {"score-clinical_safety": "2", "version": "0"}).status_code == 200
    stale = autosave(
        client, mine,
        {"score-clinical_safety": "5", "feedback-clinical_safety": "From the old tab",
         "version": "0"},
    )  # fmt: skip
    assert stale.status_code == 409
    text = stale.content.decode()
    assert "Saved from another tab at" in text
    assert "your change was not applied and is kept in the history" in text
    assert "reload</a> to continue from the saved version" in text
    assert "From the old tab" in text  # shown, so nothing is lost from view
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2} and mine.feedback == {}
    kept = mine.history.get(kind=HistoryKind.CONFLICT)
    assert kept.new["feedback"] == {"clinical_safety": "From the old tab"}


def test_the_keepalive_save_of_a_closing_tab_is_checked_like_any_save(me, mine):
    """review.js sends what is still unsent when the page is hidden or closed with
    fetch(keepalive): the form's fields urlencoded, the CSRF token in X-CSRFToken. The server
    takes it with the CSRF check and the version check, so a stale tab still cannot overwrite."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(me)
    browser.get(page_url(mine))  # sets the CSRF cookie, as the page load does
    token = browser.cookies["csrftoken"].value
    headers = {"HTTP_X_CSRFTOKEN": token, "HTTP_HX_REQUEST": "true"}
    body = urlencode({"version": "0", "feedback-clinical_safety": "typed just before closing"})

    def keepalive(data, **extra):
        return browser.post(page_url(mine, "autosave"), data, content_type=URLENCODED, **extra)

    assert keepalive(body).status_code == 403  # no token: refused, nothing saved
    assert keepalive(body, **headers).status_code == 200
    mine.refresh_from_db()
    assert mine.feedback == {"clinical_safety": "typed just before closing"}
    stale = urlencode({"version": "0", "feedback-clinical_safety": "from a tab left behind"})
    assert keepalive(stale, **headers).status_code == 409
    mine.refresh_from_db()
    assert mine.feedback == {"clinical_safety": "typed just before closing"}
    assert mine.history.get(kind=HistoryKind.CONFLICT).new["feedback"] == {
        "clinical_safety": "from a tab left behind"
    }


def filled(client, assignment) -> str:
    """Autosave two scores, two feedback texts, a link and a comment; the linked event id."""
    event_id = assignment.item.conversation.events.first().event_id
    response = autosave(
        client, assignment,
        {"score-clinical_safety": "2", "feedback-clinical_safety": "Booked before confirming.",
         "score-triage_quality": "4", "feedback-triage_quality": "Sent to urgent care.",
         "links-clinical_safety": event_id, "overall_comment": "Mostly fine.", "version": "0"},
    )  # fmt: skip
    assert response.status_code == 200
    return event_id


def test_an_autosave_posting_one_field_changes_only_that_field(client, me, mine):
    """As an htmx request carrying one field (hx-include of one input) would post it."""
    client.force_login(me)
    event_id = filled(client, mine)
    response = autosave(client, mine, {"score-triage_quality": "1", "version": "1"})
    assert response.status_code == 200
    response = autosave(client, mine, {"feedback-triage_quality": "Now clearer.", "version": "2"})
    assert response.status_code == 200
    fragment = response.content.decode()
    assert f'href="#{event_id}"' in fragment  # the chips it swaps in keep the saved link
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2, "triage_quality": 1}
    assert mine.feedback == {"clinical_safety": "Booked before confirming.",
                             "triage_quality": "Now clearer."}  # fmt: skip
    assert mine.event_links == {"clinical_safety": [event_id]}
    assert mine.overall_comment == "Mostly fine."
    html = client.get(page_url(mine)).content.decode()
    assert 'name="score-clinical_safety" value="2" checked' in html
    assert "Booked before confirming.</textarea>" in html and "Mostly fine.</textarea>" in html


def test_a_field_posted_empty_is_cleared_and_the_others_stay(client, me, mine):
    client.force_login(me)
    event_id = filled(client, mine)
    response = autosave(
        client, mine,
        {"feedback-clinical_safety": "", "links-clinical_safety": "", "overall_comment": "",
         "score-triage_quality": "", "version": "1"},
    )  # fmt: skip
    assert response.status_code == 200
    assert f'href="#{event_id}"' not in response.content.decode()
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2}
    assert mine.feedback == {"triage_quality": "Sent to urgent care."}
    assert mine.event_links == {} and mine.overall_comment == ""


def test_the_whole_form_posted_as_an_autosave_saves_the_page_as_shown(client, me, mine):
    """The whole form (as the browser serialises #annotation-form: every text field and the
    checked radios, none for an unscored rubric) is a save too. Changing one field there keeps
    the rest."""
    client.force_login(me)
    event_id = filled(client, mine)
    url = page_url(mine)
    form = review_form(client.get(url).content.decode())
    assert form.scores == {"clinical_safety": 2, "triage_quality": 4}
    changed = form.with_score("clinical_helpfulness", 5, "Clear next steps.")
    headers = htmx_headers(changed, url, target="save-status", trigger="annotation-form")
    body = urlencode(changed.post_data())  # url-encoded, as a form
    response = client.post(changed.autosave_url, body, URLENCODED, headers=headers)
    assert response.status_code == 200
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2, "triage_quality": 4, "clinical_helpfulness": 5}
    assert mine.event_links == {"clinical_safety": [event_id]}
    assert mine.overall_comment == "Mostly fine." and len(mine.feedback) == 3


def test_a_stale_partial_post_lists_only_what_it_sent_as_its_change(client, me, mine):
    client.force_login(me)
    filled(client, mine)
    stale = autosave(client, mine, {"feedback-triage_quality": "From the old tab", "version": "0"})
    assert stale.status_code == 409
    text = stale.content.decode()
    assert "Triage Quality: feedback" in text and "From the old tab" in text
    assert "Clinical Safety: score" not in text and "Overall comment" not in text
    mine.refresh_from_db()
    assert mine.feedback["triage_quality"] == "Sent to urgent care." and mine.version == 1


def test_a_stale_tab_saving_another_field_is_merged_and_told_what_is_saved(client, me, mine):
    client.force_login(me)
    assert autosave(client, mine, {"score-clinical_safety": "2", "version": "0"}).status_code == 200
    merged = autosave(client, mine, {
        "version": "0", "score-triage_quality": "4", "base-score-triage_quality": "",
    })  # fmt: skip
    assert merged.status_code == 200
    text = merged.content.decode()
    assert "with what another tab saved" in text
    assert escape('"score-clinical_safety": "2"') in text  # for the page to show
    mine.refresh_from_db()
    assert mine.scores == {"clinical_safety": 2, "triage_quality": 4} and mine.version == 2


def test_a_score_out_of_range_is_refused_with_a_reason(client, me, mine):
    client.force_login(me)
    response = autosave(client, mine, {"score-clinical_safety": "7", "version": "0"})
    assert response.status_code == 400
    assert "a whole number from 1 to 5" in response.content.decode()
    response = autosave(client, mine, {"score-clinical_safety": "two", "version": "0"})
    assert response.status_code == 400
    assert Assignment.objects.get(pk=mine.pk).scores == {}


def test_a_link_to_an_unknown_trace_event_is_refused(client, me, mine):
    client.force_login(me)
    response = autosave(client, mine, {"links-clinical_safety": "e9999", "version": "0"})
    assert response.status_code == 400 and "unknown trace event" in response.content.decode()


def test_a_post_without_a_version_is_refused(client, me, mine):
    client.force_login(me)
    response = autosave(client, mine, {"score-clinical_safety": "3"})
    assert response.status_code == 400 and "reload it" in response.content.decode()


# --- submit, skip, reopen, heartbeat -------------------------------------------------------


def test_submitting_an_incomplete_annotation_names_what_is_missing(client, me, mine):
    client.force_login(me)
    response = client.post(page_url(mine, "submit"), {"score-clinical_safety": "3", "version": "0"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Not submitted: still to score" in html
    assert "<li>Triage Quality</li>" in html and "<li>Patient Profile Realism</li>" in html
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RESERVED and mine.scores == {"clinical_safety": 3}
    assert 'name="score-clinical_safety" value="3" checked' in html


def test_submitting_a_complete_annotation_opens_the_next_item(client, me, mine):
    client.force_login(me)
    response = client.post(page_url(mine, "submit"), full_form(mine))
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.SUBMITTED
    following = Assignment.objects.open_for(me).get()
    assert following.pk != mine.pk
    assert response.status_code == 302 and response["Location"] == page_url(following)


def test_submitting_the_last_item_says_all_done(client, scored_job, me):
    study = new_study(scored_job, name="Tiny", size=1)
    only = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    response = client.post(page_url(only, "submit"), full_form(only), follow=True)
    assert response.redirect_chain[-1][0] == reverse("annotation:queue", args=[study.pk])
    assert "All done" in response.content.decode()


def test_submitting_with_only_the_last_score_posted_submits_the_saved_draft(client, me, mine):
    client.force_login(me)
    rubric_ids = [v.rubric_id for v in panel_versions(mine.item.study, mine.track)]
    first = {f"score-{rid}": "3" for rid in rubric_ids[:-1]}
    autosave(client, mine, first | {"overall_comment": "Fine.", "version": "0"})
    response = client.post(page_url(mine, "submit"), {f"score-{rubric_ids[-1]}": "5",
                                                      "version": "1"})  # fmt: skip
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.SUBMITTED
    assert mine.scores == dict.fromkeys(rubric_ids[:-1], 3) | {rubric_ids[-1]: 5}
    assert mine.overall_comment == "Fine."


def test_submitting_from_a_stale_tab_shows_the_conflict_and_keeps_the_saved_work(client, me, mine):
    client.force_login(me)
    autosave(client, mine, {"score-clinical_safety": "2", "version": "0"})
    response = client.post(page_url(mine, "submit"), full_form(mine, score=5, version=0))
    assert response.status_code == 409
    assert "Saved from another tab at" in response.content.decode()
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RESERVED and mine.scores == {"clinical_safety": 2}


def test_skipping_needs_a_reason_and_the_item_comes_back_at_the_end(client, scored_job, me):
    study = new_study(scored_job, name="Two items", size=2)
    first = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    refused = client.post(page_url(first, "skip"), {"reason": "  "})
    assert refused.status_code == 400 and "Say why you skip" in refused.content.decode()
    response = client.post(page_url(first, "skip"), {"reason": "Outside my specialty"})
    second = Assignment.objects.open_for(me).get()
    assert second.item_id != first.item_id and response["Location"] == page_url(second)
    client.post(page_url(second, "submit"), full_form(second))
    first.refresh_from_db()  # nothing new left: the skipped item is back
    assert first.status == AssignmentStatus.RESERVED and first.skip_reason == "Outside my specialty"


def test_submitted_work_is_read_only_until_reopened(client, me, mine):
    client.force_login(me)
    client.post(page_url(mine, "submit"), full_form(mine, score=4))
    html = client.get(page_url(mine)).content.decode()
    assert "hx-post" not in html.split('id="annotation-form"')[1].split(">")[0]
    assert 'value="4" checked disabled' in html and "Reopen to change" in html
    assert autosave(client, mine, full_form(mine, version=1)).status_code == 403
    client.post(page_url(mine, "reopen"))
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RESERVED
    assert mine.history.filter(kind=HistoryKind.REOPEN).exists()
    assert 'hx-post="' in client.get(page_url(mine)).content.decode()


def test_the_heartbeat_counts_time_on_task(client, me, mine):
    client.force_login(me)
    response = client.post(page_url(mine, "heartbeat"))
    assert response.status_code == 204
    mine.refresh_from_db()
    assert mine.last_active_at is not None


# --- calibration reveal --------------------------------------------------------------------


def test_a_calibration_round_reveals_jury_and_peers_after_submit(client, calibration, me):
    assignment = queue.next_assignment(study=calibration, annotator=me)
    client.force_login(me)
    before = client.get(page_url(assignment)).content.decode()
    assert "data-reveal" not in before and "Jury average" not in before
    response = client.post(page_url(assignment, "submit"), full_form(assignment, score=2))
    assert response["Location"] == page_url(assignment)  # the reveal first, then next
    html = client.get(page_url(assignment)).content.decode()
    assert html.count("data-reveal") == 5 and "Jury average" in html
    explanation = JudgeScore.objects.filter(
        conversation=assignment.item.conversation,
        rubric_version__rubric_id="clinical_safety",
    ).exclude(explanation="")[0]
    assert explanation.explanation[:40] in html
    assert "Next item" in html


SYNTHETIC_BADGE = '<span class="badge scripted" title="not a person\'s scores">synthetic'
PRACTICE_BADGE = '<span class="badge warn" title="unlicensed annotator: practice, kept apart">'


def test_the_reveal_marks_a_simulated_clinicians_scores_synthetic(client, calibration, clinicians):
    scripted, me = clinicians[0], clinicians[1]
    theirs = queue.next_assignment(study=calibration, annotator=scripted)
    Assignment.objects.filter(pk=theirs.pk).update(synthetic=True)  # as the demo marks it
    theirs.refresh_from_db()
    annotation_submit(theirs, draft=Draft(scores=full_scores(theirs, 1)), version=0,
                      actor=scripted)  # fmt: skip
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    practice = Assignment.objects.create(item=theirs.item, annotator=student, track=student.track,
                                         practice=True, queue_key="p")  # fmt: skip
    annotation_submit(practice, draft=Draft(scores=full_scores(practice, 5)), version=0,
                      actor=student)  # fmt: skip
    mine = queue.next_assignment(study=calibration, annotator=me)
    assert mine.item_id == theirs.item_id
    client.force_login(me)
    client.post(page_url(mine, "submit"), full_form(mine, score=3))
    html = squashed(client.get(page_url(mine)))
    panel = len(CLINICAL_PANEL + REALISM)
    assert html.count(f"<strong>Peers:</strong> 1 {SYNTHETIC_BADGE}</span>, 5 ") == panel
    assert html.count(f"5 {PRACTICE_BADGE}practice</span></p>") == panel


IMPORTED_BADGE = (
    '<span class="badge" title="scored elsewhere and imported from a file by a researcher">'
)


def test_the_reveal_marks_imported_peer_scores(client, calibration, clinicians):
    peer, me = clinicians[0], clinicians[1]
    theirs = queue.next_assignment(study=calibration, annotator=peer)
    Assignment.objects.filter(pk=theirs.pk).update(imported=True)  # as an annotation import marks
    theirs.refresh_from_db()
    annotation_submit(theirs, draft=Draft(scores=full_scores(theirs, 2)), version=0, actor=peer)
    mine = queue.next_assignment(study=calibration, annotator=me)
    client.force_login(me)
    client.post(page_url(mine, "submit"), full_form(mine, score=3))
    html = squashed(client.get(page_url(mine)))
    panel = len(CLINICAL_PANEL + REALISM)
    assert html.count(f"<strong>Peers:</strong> 2 {IMPORTED_BADGE}imported</span></p>") == panel


def test_a_submitted_calibration_item_says_why_it_cannot_be_reopened(client, calibration, me):
    assignment = queue.next_assignment(study=calibration, annotator=me)
    client.force_login(me)
    client.post(page_url(assignment, "submit"), full_form(assignment))
    html = client.get(page_url(assignment)).content.decode()
    assert page_url(assignment, "reopen") not in html and "Reopen" not in html
    reason = "Final: scores in a calibration round cannot change once the jury&#x27;s and peers"
    assert 'id="reopen-refusal"' in html and reason in html
    refused = client.post(page_url(assignment, "reopen"))
    assert refused.status_code == 403 and reason in refused.content.decode()


def test_a_target_study_never_reveals_jury_or_peers(client, study, clinicians):
    peer, me = clinicians[0], clinicians[1]
    theirs = queue.next_assignment(study=study, annotator=peer)
    annotation_submit(theirs, draft=Draft(scores=full_scores(theirs, 1)), version=0, actor=peer)
    mine = queue.next_assignment(study=study, annotator=me)
    assert mine.item_id == theirs.item_id  # breadth-first: a peer scored the same item
    client.force_login(me)
    client.post(page_url(mine, "submit"), full_form(mine, score=5))
    mine.refresh_from_db()
    assert mine.is_submitted
    html = client.get(page_url(mine)).content.decode()
    assert "data-reveal" not in html and "Jury average" not in html and "Peers" not in html
    explanations = JudgeScore.objects.filter(conversation=mine.item.conversation).exclude(
        explanation=""
    )
    assert not any(e.explanation in html for e in explanations)


def full_scores(assignment, score: int) -> dict:
    return {v.rubric_id: score for v in panel_versions(assignment.item.study, assignment.track)}


# --- locked study ---------------------------------------------------------------------------


def test_a_locked_study_shows_the_item_read_only(client, study, me, mine):
    client.force_login(me)
    autosave(client, mine, {"score-clinical_safety": "2", "version": "0"})
    study_lock(study)
    html = client.get(page_url(mine)).content.decode()
    assert 'id="locked-note"' in html
    assert 'name="score-clinical_safety" value="2" checked disabled' in html
    assert "data-autosave" not in html and "Submit and open next" not in html
    assert "Skip this item" not in html and "Next item" not in html
    refused = autosave(client, mine, {"score-clinical_safety": "3", "version": "1"})
    assert refused.status_code == 403 and "locked" in refused.content.decode()
    assert client.post(page_url(mine, "submit"), full_form(mine)).status_code == 403
    assert client.post(page_url(mine, "skip"), {"reason": "late"}).status_code == 403


def test_skipping_in_a_locked_study_asks_why_once_and_says_it(client, study, me, mine, monkeypatch):
    asked = []
    refusal = Assignment.edit_refusal
    monkeypatch.setattr(Assignment, "edit_refusal", lambda self: asked.append(1) or refusal(self))
    client.force_login(me)
    study_lock(study)
    refused = client.post(page_url(mine, "skip"), {"reason": "late"})
    assert refused.status_code == 403 and "The study is locked" in refused.content.decode()
    assert asked == [1]


def test_an_unlicensed_annotator_is_told_their_calibration_work_is_practice(client, calibration):
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    assignment = queue.next_assignment(study=calibration, annotator=student)
    client.force_login(student)
    html = client.get(page_url(assignment)).content.decode()
    assert ">practice</span>" in html


def test_an_admin_is_refused_like_any_staff_member(client, mine):
    client.force_login(make_user("adam", Role.ADMIN))
    assert client.post(page_url(mine, "autosave"), {"version": "0"}).status_code == 403


def test_the_page_waits_for_an_autosaves_answer_as_long_as_the_site_says(
    client, me, mine, settings
):
    client.force_login(me)
    assert 'data-save-timeout="20"' in client.get(page_url(mine)).content.decode()
    settings.REVIEW_SAVE_TIMEOUT_SECONDS = 45  # a slow hospital proxy
    assert 'data-save-timeout="45"' in client.get(page_url(mine)).content.decode()


def test_the_page_retries_a_failed_autosave_after_the_pauses_the_site_sets(
    client, me, mine, settings
):
    client.force_login(me)
    assert 'data-save-retries="2,4,8,15,30"' in client.get(page_url(mine)).content.decode()
    settings.REVIEW_SAVE_RETRY_SECONDS = (1, 5)
    assert 'data-save-retries="1,5"' in client.get(page_url(mine)).content.decode()
