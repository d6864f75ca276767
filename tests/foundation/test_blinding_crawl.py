"""Blinding: an annotator who follows every link and htmx request they can reach, and posts
every form of the review screen, never sees a model name, an agent configuration, a judge's
words or a jury score in a target study - on pages, fragments, URLs, downloads or error pages;
nor any word about the jury or how synthetic scores are made there (a synthetic clinician's
work says "synthetic", nothing more), nor a judge's persona anywhere, the calibration reveal
included.

The annotator's world: a target study drawn from a scored run in which they hold a draft (with
a linked trace event), a submitted item and a skipped one, and a calibration round they have
not submitted yet (after submitting in a round the jury's scores are shown on purpose; that
reveal is tested in tests/annotation). They are a senior clinician, and an item of the target
study on which two other clinicians disagree (one of them the demo's synthetic clinician) waits
in their adjudication queue. The study's jury has a promoted calibrated version (its name ends
"· v2") that learned from the study and re-scored it, with prompt examples whose feedback is a
marker string, and fold juries of the study's cross-fitting: examples go only to judge prompts,
so neither the marker, nor a version's or fold's name, nor an example reaches the annotator.
Every kind of notification email is rendered as the workers send it, and read like the pages."""

import json
import re
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import urljoin, urlparse

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from accounts.models import NotificationKind, Role, Track
from alignment.services.rescoring import study_rescore
from annotation.engine.simulated import simulated_clinician
from annotation.models import Assignment, CalibrationGuide, Notification
from annotation.services import queue
from annotation.services.adjudication import adjudication_send
from annotation.services.annotations import Draft, annotation_autosave, annotation_submit
from annotation.services.guides import guide_publish
from annotation.services.moves import assignment_reassign, staff_reopen, study_deadline_set
from annotation.services.notifications import deadline_reminders_create, notification_message
from annotation.services.round_report import jury_means
from benchmark.models import RunAgent
from jury.engine.calibration import Calibration, Example, RubricCalibration
from jury.models import JudgeScore, Jury
from jury.services import juries, scoring
from tests.annotation.conftest import annotators, enrol, new_study
from tests.annotation.test_annotation_writes import full_draft
from tests.conftest import make_user
from tests.foundation.access_table import PAGES, PUBLIC, build_objects
from tests.jury.services.builders import score_now
from tests.support.builders import enriched_set, launched_run, played

LINK_ATTRIBUTES = {"href", "hx-get", "action", "src"}
MAX_PAGES = 300


class LinkParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.links += [value for name, value in attrs if name in LINK_ATTRIBUTES and value]


@pytest.fixture(scope="module")
def scored_world(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        run = played(
            launched_run(enriched_set(size=4), models=("offline/careful", "offline/careless"))
        )
        job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
        for score_id in scoring.pending_score_ids(job):
            scoring.judge_score_execute(score_id)
        annotator = make_user("blinded", Role.ANNOTATOR, Track.OPERATIONAL)
        annotator.senior = True
        annotator.save(update_fields=["senior"])
        work = annotator_work(job, annotator)
        calibrated_family(job.jury, work["target"])
        # Every URL of the site, pointed at the scored run and job where it takes them.
        objects = build_objects(
            {Role.ANNOTATOR: make_user("other", Role.ANNOTATOR, Track.CLINICAL)}
        )
        objects |= {"run": run, "conversation": run.conversations.first(), "scoring_job": job}
        refused_urls = [
            (page, reverse(page.name, kwargs=page.kwargs(objects)))
            for page in PAGES
            if Role.ANNOTATOR not in page.roles and page.name not in PUBLIC
        ]
    yield annotator, refused_urls, work
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def annotator_work(job, annotator) -> dict:
    """A target study where the annotator has a draft, a submission and a skip, and a
    calibration round with an open item (not submitted: no reveal)."""
    calibration = new_study(job, name="Round 1", kind="calibration", size=2)
    target = new_study(job, name="Main study", size=5)
    target.guide_in_target = True  # the researcher shows the project's guide here too
    target.save(update_fields=["guide_in_target"])
    enrol(target, annotator)
    disputed = major_disagreement(target, Track.OPERATIONAL)
    submitted = queue.next_assignment(study=target, annotator=annotator)
    annotation_submit(submitted, draft=full_draft(submitted), version=0, actor=annotator)
    skipped = queue.next_assignment(study=target, annotator=annotator)
    queue.assignment_skip(skipped, reason="need a second look", actor=annotator)
    draft = queue.next_assignment(study=target, annotator=annotator)
    event = draft.item.conversation.events.first().event_id
    annotation_autosave(
        draft, actor=annotator, version=0,
        draft=Draft(scores={"task_completion": 3}, event_links={"task_completion": [event]}),
    )  # fmt: skip
    practice = queue.next_assignment(study=calibration, annotator=annotator)
    # The project's guide shows on the target study's pages too, linking to the annotator's item.
    CalibrationGuide.objects.create(
        project=calibration.project, after_study=calibration, title="Round 1 lessons",
        body_markdown="Score what was done.", published_at=timezone.now(),
        examples=[{"item": practice.item_id, "note": "Booked before asking."}],
    )  # fmt: skip
    return {"target": target, "calibration": calibration, "draft": draft,
            "submitted": submitted, "skipped": skipped, "practice": practice,
            "adjudication": disputed}  # fmt: skip


EXAMPLE_MARKER = "example-feedback-marker-5c1e"


def calibrated_family(jury, study) -> None:
    """A promoted version of `jury` calibrated on `study` (prompt examples whose feedback holds
    EXAMPLE_MARKER), re-scoring the study's annotated conversations, and two fold juries."""
    items = list(study.items.values_list("conversation_id", flat=True))
    examples = tuple(
        Example(item, score, f"{EXAMPLE_MARKER} {score}")
        for item, score in zip(items, (2, 4), strict=False)
    )
    calibration = Calibration(
        rubrics={
            r.rubric_id: RubricCalibration(examples=examples) for r in study.rubric_versions.all()
        }
    )
    learned = {"study_id": study.pk, "study_name": study.name, "variant": "examples",
               "items": items[:2], "n_ratings": 4, "fitted_at": "2025-01-01T00:00:00Z"}  # fmt: skip
    version = juries.jury_version_create(jury, calibration, learned_from=learned)
    for fold in (1, 2):
        label = f"fold {fold} of 2 ({study.name})"
        juries.jury_version_create(
            jury, calibration, learned_from={**learned, "label": label, "fold": fold, "folds": 2},
            purpose=juries.FOLD,
        )  # fmt: skip
    judged = study.rubric_versions.filter(kind="dimension")
    for job in study_rescore(study, jury=version, rubric_versions=list(judged)):
        score_now(job)


def major_disagreement(study, track, prefix="peer"):
    """Two clinicians of `track` 4 points apart on one item, sent to adjudication; the first is
    the demo's synthetic clinician, with the feedback it writes."""
    first, second = annotators(track, 2, prefix=prefix, project=study.project.name)
    pair = [queue.next_assignment(study=study, annotator=p) for p in (first, second)]
    assert pair[0].item_id == pair[1].item_id  # breadth-first: the same item
    Assignment.objects.filter(pk=pair[0].pk).update(synthetic=True)
    for assignment, score, words in zip(
        pair, (1, 5), (simulated_clinician().feedback, "Booked before asking the patient"),
        strict=True,
    ):  # fmt: skip
        draft = full_draft(assignment, score)
        draft.feedback = dict.fromkeys(draft.feedback, words)
        annotation_submit(assignment, draft=draft, version=0, actor=assignment.annotator)
    rubric = next(iter(draft.scores))  # the track's first judged rubric
    return adjudication_send(study=study, item=pair[0].item, rubric_id=rubric, actor=None)


def forbidden_strings() -> set[str]:
    """Model identities, configuration names and judge explanations that must never leak."""
    strings = set()
    for agent in RunAgent.objects.select_related("agent_config"):
        strings |= {agent.model, agent.label, agent.agent_config.name}
    strings |= {s.explanation for s in JudgeScore.objects.exclude(explanation="")}
    strings |= set(JudgeScore.objects.values_list("judge_model", flat=True))
    # Calibrated versions and fold juries: their names, and their prompt examples as stored.
    for jury in Jury.objects.exclude(base=None):
        strings.add(jury.name)
        for rubric in jury.calibration_data().rubrics.values():
            strings |= {json.dumps(example.to_dict()) for example in rubric.examples}
            strings |= {example.feedback for example in rubric.examples}
    strings.add(EXAMPLE_MARKER)
    return {s for s in strings if len(s) > 6}


# Words about the jury, a judge's persona or how synthetic scores are made: none may reach a
# clinician's page of a target study (the rubric catalogue, which says the jury scores the
# rubrics, is not one); a persona or the making of synthetic scores reaches no page at all.
JURY_TALK = re.compile(r"\bjury\b|\bjudges? (?:mean|average|score)", re.IGNORECASE)
HOW_MADE = re.compile(
    r"bias and noise|derived from|\b(?:standard|strict|lenient|flaky) judge\b|simulated clinician",
    re.IGNORECASE,
)


class TextParser(HTMLParser):
    """What a person reads or hears: the text and the titles and labels, no markup or URLs."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.parts += [value for name, value in attrs if name in ("title", "aria-label") and value]

    def handle_data(self, data):
        self.parts.append(data)


def readable(html: str) -> str:
    parser = TextParser()
    parser.feed(html)
    return " ".join(parser.parts)


def _body(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def crawl(client, *starts: str, until_found: frozenset[str] = frozenset()) -> dict[str, str]:
    """The pages reachable from `starts` by their links, by URL; with `until_found`, only until
    every one of those strings has been seen (the rest of the site cannot add to that)."""
    seen, to_visit, pages = set(), list(starts or ["/"]), {}
    missing = set(until_found)
    while to_visit and len(pages) < MAX_PAGES and (missing or not until_found):
        url = to_visit.pop()
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        body = _body(response)
        missing = {wanted for wanted in missing if wanted not in body}
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            pages[url] = body  # exports and error pages count too
            continue
        text = body
        pages[url] = text
        parser = LinkParser()
        parser.feed(text)
        for link in parser.links:
            target = urljoin(url, link)
            parsed = urlparse(target)
            if parsed.netloc in {"", "testserver"} and not parsed.path.startswith(
                ("/static/", "/accounts/logout")
            ):
                to_visit.append(parsed.path + (f"?{parsed.query}" if parsed.query else ""))
    return pages


def leaks_in(pages: dict[str, str]) -> list[tuple[str, str]]:
    return [
        (url, secret)
        for url, text in pages.items()
        for secret in forbidden_strings()
        if secret in str(text) or secret in url
    ]


SCOREISH = re.compile(r"jury (mean|aggregate|score)|pass rate|judge \d", re.IGNORECASE)


def review_urls(work: dict) -> list[str]:
    urls = [reverse("annotation:queue", args=[work[s].pk]) for s in ("target", "calibration")]
    for name in ("draft", "submitted", "skipped", "practice"):
        urls.append(reverse("annotation:review", args=[work[name].public_id]))
    return urls


def adjudication_urls(work: dict) -> list[str]:
    return [
        reverse("annotation:adjudications"),
        reverse("annotation:adjudication", args=[work["adjudication"].public_id]),
    ]


@pytest.mark.django_db
def test_an_annotator_never_sees_model_identity_or_jury_scores(client, scored_world):
    annotator, _, work = scored_world
    client.force_login(annotator)
    pages = crawl(client, "/")
    assert set(review_urls(work)) <= set(pages)  # links from home reach every review screen
    assert set(adjudication_urls(work)) <= set(pages)  # and the senior's adjudication
    assert "Booked before asking the patient" in pages[adjudication_urls(work)[1]]
    assert all(
        work["draft"].item.conversation.events.first().event_id in pages[url]
        for url in review_urls(work)[2:3]
    )  # fmt: skip - the trace is really shown
    guide_link = f'<a href="{review_urls(work)[-1]}">item 1</a>'
    assert guide_link in pages[review_urls(work)[0]]  # the guide's example, on a target page
    assert leaks_in(pages) == []
    assert [url for url, text in pages.items() if SCOREISH.search(str(text))] == []
    assert escape(simulated_clinician().feedback) in pages[adjudication_urls(work)[1]]  # read
    target_pages = [*review_urls(work)[:1], *review_urls(work)[2:5], *adjudication_urls(work)]
    assert [url for url in target_pages if JURY_TALK.search(readable(pages[url]))] == []
    assert [url for url, text in pages.items() if HOW_MADE.search(readable(str(text)))] == []


@pytest.mark.django_db
def test_the_calibration_reveal_shows_the_jury_but_no_judge_persona(client, scored_world):
    """After submitting in a calibration round the jury's and each judge's scores are shown on
    purpose, with the judges' explanations: never the judge's model or persona ("strict")."""
    annotator, _, work = scored_world
    practice = work["practice"]
    annotation_submit(practice, draft=full_draft(practice), version=0, actor=annotator)
    client.force_login(annotator)
    page = _body(client.get(reverse("annotation:review", args=[practice.public_id])))
    assert "data-reveal" in page and "Judge 2:" in page
    strict = JudgeScore.objects.filter(
        conversation_id=practice.item.conversation_id, judge_model="offline/strict"
    ).exclude(explanation="")
    assert any("Strict judge" in s.explanation for s in strict)  # the words it wrote ...
    assert HOW_MADE.search(readable(page)) is None  # ... are not shown as written
    assert not [m for m in JudgeScore.objects.values_list("judge_model", flat=True) if m in page]
    assert "offline/careless" not in page and "offline/careful" not in page


@pytest.mark.django_db
def test_every_answer_of_the_review_forms_is_blinded(client, scored_world):
    """Saves, a stale tab's conflict, refused values, an incomplete submit, a heartbeat, a skip,
    "next" and a reopening: the fragments and pages they answer with name no model and show no
    jury score."""
    annotator, _, work = scored_world
    client.force_login(annotator)
    draft = work["draft"]
    item = str(draft.public_id)
    answers = {}

    def post(name, data, key=None, **extra):
        url = reverse(f"annotation:{name}", args=[item if name != "next" else work["target"].pk])
        response = client.post(url, data, follow=True, **extra)
        answers[key or name] = _body(response)
        return response

    version = type(draft).objects.get(pk=draft.pk).version
    htmx = {"HTTP_HX_REQUEST": "true"}
    post("autosave", {"version": version, "score-task_completion": "4"}, **htmx)
    post("autosave", {"version": version, "score-task_completion": "2"}, "conflict", **htmx)
    post("autosave", {"version": version + 1, "score-task_completion": "9"}, "refused", **htmx)
    post("submit", {"version": version + 1, "score-task_completion": "4"}, "incomplete")
    post("heartbeat", {}, **htmx)
    post("next", {})
    post("skip", {"reason": "later"})
    item = str(work["submitted"].public_id)  # reopening submitted work answers the review page
    post("reopen", {})
    assert 'id="annotation-form"' in answers["reopen"]  # it really reopened for editing
    assert len(answers) == 8
    assert leaks_in(answers) == []
    assert [k for k, text in answers.items() if SCOREISH.search(str(text))] == []


@pytest.mark.django_db
@pytest.mark.leg("postgres")  # the same on either database: half a minute off the SQLite leg
def test_the_same_crawl_finds_model_names_for_a_researcher(client, scored_world):
    """The check above can fail: researchers are allowed to see what annotators must not."""
    researcher = make_user("sees-all", Role.RESEARCHER)
    client.force_login(researcher)
    # A model name, and the calibrated jury version the staff pages show.
    expected = frozenset({"offline/careless", "Offline scripted jury · v2"})
    pages = crawl(client, until_found=expected)
    found = {s for text in pages.values() for s in forbidden_strings() if s in str(text)}
    assert expected <= found


@pytest.mark.django_db
def test_the_error_pages_an_annotator_can_reach_show_nothing_blinded(client, scored_world):
    """Every staff URL (run, conversation, reports, exports of the scored run) answers an
    annotator with the styled 403 page, and a guessed URL with the 404 page: neither names a
    model, a configuration or a judge's words."""
    annotator, refused_urls, work = scored_world
    client.force_login(annotator)
    guessed = ["/no/such/page/", "/annotation/items/00000000-0000-4000-8000-000000000000/"]
    # Another annotator's item, and the staff view of the annotator's own item.
    foreign = [
        reverse("annotation:review", args=[a.public_id])
        for a in work["target"].items.first().assignments.exclude(annotator=annotator)
    ]
    asked = [(page.method, url, page.api) for page, url in refused_urls]
    asked += [("get", url, False) for url in [*guessed, *foreign]]
    responses = {url: (getattr(client, method)(url), api) for method, url, api in asked}
    assert {
        url: r.status_code for url, (r, _) in responses.items() if r.status_code not in (403, 404)
    } == {}
    pages = {url: _body(response) for url, (response, _) in responses.items()}
    # The site's error pages; the API answers its callers in JSON.
    assert all("way-back" in pages[url] for url, (_, api) in responses.items() if not api)
    assert all(
        "annotators cannot use it" in pages[url] for url, (_, api) in responses.items() if api
    )
    assert leaks_in(pages) == []


@pytest.mark.django_db
def test_a_senior_clinician_sees_the_jury_only_where_the_study_allows_it(client, scored_world):
    annotator, _, work = scored_world
    client.force_login(annotator)
    url = adjudication_urls(work)[1]
    hidden = _body(client.get(url))
    assert 'id="jury-for-adjudication"' not in hidden and "jury's mean" not in hidden
    study = work["target"]
    study.adjudication_shows_jury = True
    study.save(update_fields=["adjudication_shows_jury"])
    shown = _body(client.get(url))
    mean = jury_means(study)[(work["adjudication"].item_id, work["adjudication"].rubric_id)]
    assert f"<strong>{mean:.2f}</strong>" in shown  # the jury's mean, as allowed
    assert leaks_in({url: shown}) == []  # and still no model, agent or judge's words


@pytest.mark.django_db
def test_no_notification_names_a_model_or_shows_a_score(scored_world):
    """Every kind of notification, rendered as a worker sends it, for events whose staff-written
    parts (a guide's title, a note) name a model on purpose: the redactor takes it out."""
    _, _, work = scored_world
    job = work["target"].scoring_jobs.get()
    person = make_user("notified", Role.ANNOTATOR, Track.OPERATIONAL)
    enrol("Notices", person)  # enrolled
    study = new_study(job, name="Notice study", size=2, project="Notices")  # study opened
    guide = CalibrationGuide.objects.create(
        project=study.project, title="Lessons: offline/careless books too early", body_markdown="-"
    )
    guide_publish(guide, actor=None)  # guide published
    mine = queue.next_assignment(study=study, annotator=person)
    annotation_submit(mine, draft=full_draft(mine), version=0, actor=person)
    peers = annotators(Track.OPERATIONAL, 2, prefix="notice-peer", project="Notices")
    first = queue.next_assignment(study=study, annotator=peers[0])
    annotation_submit(first, draft=full_draft(first), version=0, actor=peers[0])
    held = queue.next_assignment(study=study, annotator=peers[1])
    assignment_reassign(held, to=person, actor=None)  # item reassigned
    staff_reopen(mine, actor=None, note="Compare with what offline/careless did")  # reopened
    study_deadline_set(study, deadline=timezone.now() + timedelta(days=1), actor=None)
    deadline_reminders_create()  # deadline soon
    person.senior = True
    person.save(update_fields=["senior"])
    disputed = new_study(job, name="Disputed", size=1, project="Notices")
    major_disagreement(disputed, Track.OPERATIONAL, prefix="notice-dispute")  # adjudication
    sent = Notification.objects.filter(recipient=person)
    assert set(sent.values_list("kind", flat=True)) == set(NotificationKind.values)
    texts = {n.kind: "\n".join(notification_message(n)) for n in sent}
    assert "[model name hidden] books too early" in texts["guide_published"]
    assert "Compare with what [model name hidden] did" in texts["item_reopened"]
    assert leaks_in(texts) == []
    assert [kind for kind, text in texts.items() if SCOREISH.search(text)] == []
