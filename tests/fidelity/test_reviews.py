"""A review end to end through the services with the offline reviewer, on a run played by the
lapsing scripted patient; the pages; a lost unit sent again; the replay of flagged ones."""

from django.urls import reverse

from benchmark.models import Conversation
from benchmark.services.trace_marks import trace_marks
from fidelity.models import ReviewStatus
from fidelity.services import reports, reviews
from jobs.models import JobStatus
from jobs.services.leases import LeasedTask
from tests.fidelity.conftest import review_now

# What each lapse of offline/lapses leaves in a patient message, and the kind it must draw.
SIGNS = {
    "Is there anything else I can help you with today?": "speaks_as_assistant",
    "I don't take any medicines, by the way.": "off_record",
    "I'm allergic to bee stings.": "off_record",
}


def expected_kinds(conversation: Conversation) -> set[str]:
    patient = list(conversation.events.filter(kind="patient_message").order_by("seq"))
    kinds = {kind for sign, kind in SIGNS.items() for e in patient if sign in e.content}
    if conversation.entry.story.strip() in patient[0].content:
        kinds.add("scenario_unprompted")
    if conversation.assistant_turns <= 1:
        kinds.add("ends_early")
    return kinds


def test_every_lapse_is_flagged_and_nothing_else(finished_review):
    assert finished_review.status == JobStatus.FINISHED
    units = finished_review.conversation_reviews.select_related("conversation__entry")
    assert units.count() == finished_review.run.conversations.scorable().count()
    assert all(unit.status == ReviewStatus.DONE for unit in units)
    lapsed = 0
    for unit in units:
        expected = expected_kinds(unit.conversation)
        assert {f["kind"] for f in unit.findings} == expected, unit.conversation.public_id
        assert unit.flagged == bool(expected)
        lapsed += bool(expected)
    assert lapsed >= 1
    assert sum(unit.input_tokens for unit in units) > 0


def test_the_report_counts_rates_and_kinds(finished_review):
    report = reports.review_report(finished_review)
    total = finished_review.conversation_reviews.count()
    flagged = len(report["flagged"])
    assert report["overall"].n == total and report["overall"].faithful == total - flagged
    assert report["overall"].low <= report["overall"].rate <= report["overall"].high
    by_personality = report["groupings"][0]["rows"]
    assert sum(row.n for row in by_personality) == total
    assert sum(kind["conversations"] > 0 for kind in report["kinds"]) >= 1


def test_the_review_page_shows_the_report_and_links_flagged_conversations(
    researcher_client, finished_review
):
    page = researcher_client.get(reverse("fidelity:review", args=[finished_review.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and "Fidelity rate" in text
    for row in reports.flagged_rows(finished_review):
        assert reverse("benchmark:conversation", args=[row["conversation"].public_id]) in text
    assert "Re-run flagged" in text or not reports.flagged_rows(finished_review)


def test_the_conversation_trace_marks_the_flagged_message(researcher_client, finished_review):
    unit = finished_review.conversation_reviews.flagged().first()
    finding = unit.findings[0]
    marks = trace_marks(unit.conversation)
    assert [m.text for m in marks[finding["event"]]] == [
        f["explanation"] for f in unit.findings if f["event"] == finding["event"]
    ]
    page = researcher_client.get(
        reverse("benchmark:conversation", args=[unit.conversation.public_id])
    )
    assert finding["explanation"] in page.content.decode()


def test_the_run_page_offers_a_review_and_the_form_launches_one(
    admin_client_, lapsing_run, django_capture_on_commit_callbacks
):
    run_page = admin_client_.get(reverse("benchmark:run", args=[lapsing_run.pk])).content.decode()
    url = reverse("fidelity:review_new", args=[lapsing_run.pk])
    assert url in run_page and admin_client_.get(url).status_code == 200
    with django_capture_on_commit_callbacks():
        response = admin_client_.post(
            url, {"reviewer_model": "offline/reviewer", "use_cache": "on"}
        )
    review = lapsing_run.fidelity_reviews.latest("created_at")
    assert response["Location"] == reverse("fidelity:review", args=[review.pk])
    assert review.conversation_reviews.exclude(lease_token="").count() == review.concurrency


def test_an_unknown_offline_reviewer_is_refused_on_the_form(admin_client_, lapsing_run):
    url = reverse("fidelity:review_new", args=[lapsing_run.pk])
    response = admin_client_.post(url, {"reviewer_model": "offline/nobody"})
    assert "unknown offline behaviour" in response.content.decode()


def test_a_unit_lost_with_its_worker_is_sent_again_and_the_stale_message_does_nothing(
    lapsing_run, finished_review, settings
):
    settings.CONVERSATION_LEASE_SECONDS = 0  # every lease has run out at once
    review = reviews.review_launch(run=lapsing_run, reviewer_model="offline/reviewer")
    # Messages leave once the transaction commits; the dispatch returns what it leased.
    sent: list[LeasedTask] = reviews.review_dispatch(review, lambda messages: None)
    first_pk, stale_token = sent[0]
    again = reviews.review_dispatch(review, lambda messages: None)  # the watch, lease run out
    assert (first_pk, stale_token) not in again and first_pk in {pk for pk, _ in again}
    # Leases of a normal length again for the work itself: with no lease at all, the units'
    # heartbeats would beat without pause, each waiting out SQLite's busy timeout on this
    # test's open transaction (four minutes in all).
    settings.CONVERSATION_LEASE_SECONDS = 900
    assert reviews.conversation_review_execute(first_pk, stale_token) is False
    review = review_now(review)
    mine = {u.conversation_id: u.findings for u in review.conversation_reviews.all()}
    before = {u.conversation_id: u.findings for u in finished_review.conversation_reviews.all()}
    assert review.status == JobStatus.FINISHED and mine == before


def test_flagged_conversations_are_replayed_with_their_case_and_seed(finished_review):
    replay = reports.flagged_replay(finished_review)
    originals = sorted(
        (u.conversation.entry_id, u.conversation.seed, u.conversation.repetition)
        for u in finished_review.conversation_reviews.flagged().select_related("conversation")
    )
    replayed = sorted(replay.conversations.values_list("entry_id", "seed", "repetition"))
    assert replayed == originals and not replay.use_cache
    assert replay.config_hash == finished_review.run.config_hash
    # Each replayed case meets the roster it met, with no roster call.
    rosters = {r.seed: r.roster for r in finished_review.run.case_rosters.all()}
    copied = {r.seed: r.roster for r in replay.case_rosters.all()}
    assert copied and copied == {seed: rosters[seed] for _, seed, _ in originals}
