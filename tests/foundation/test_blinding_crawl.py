"""Blinding: an annotator who follows every link and htmx request they can reach never sees
a model name, an agent configuration or a jury score. Grows with the annotation pages."""

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlparse

import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts.models import Role, Track
from benchmark.models import RunAgent
from jury.models import JudgeScore
from jury.services import juries, scoring
from tests.conftest import make_user
from tests.foundation.access_table import PAGES, PUBLIC, build_objects
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
            launched_run(enriched_set(size=2), models=("offline/careful", "offline/careless"))
        )
        job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
        for score_id in scoring.pending_score_ids(job):
            scoring.judge_score_execute(score_id)
        annotator = make_user("blinded", Role.ANNOTATOR, Track.OPERATIONAL)
        # Every URL of the site, pointed at the scored run and job where it takes them.
        objects = build_objects({}) | {
            "run": run,
            "conversation": run.conversations.first(),
            "scoring_job": job,
        }
        refused_urls = [
            reverse(page.name, kwargs=page.kwargs(objects))
            for page in PAGES
            if Role.ANNOTATOR not in page.roles and page.name not in PUBLIC
        ]
    yield annotator, refused_urls
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def forbidden_strings() -> set[str]:
    """Model identities, configuration names and judge explanations that must never leak."""
    strings = set()
    for agent in RunAgent.objects.select_related("agent_config"):
        strings |= {agent.model, agent.label, agent.agent_config.name}
    strings |= {s.explanation for s in JudgeScore.objects.exclude(explanation="")}
    return {s for s in strings if len(s) > 6}


def _body(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def crawl(client, start: str = "/") -> dict[str, str]:
    seen, queue, pages = set(), [start], {}
    while queue and len(pages) < MAX_PAGES:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        body = _body(response)
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
                queue.append(parsed.path + (f"?{parsed.query}" if parsed.query else ""))
    return pages


def leaks_in(pages: dict[str, str]) -> list[tuple[str, str]]:
    return [
        (url, secret)
        for url, text in pages.items()
        for secret in forbidden_strings()
        if secret in str(text) or secret in url
    ]


@pytest.mark.django_db
def test_an_annotator_never_sees_model_identity_or_jury_scores(client, scored_world):
    annotator, _ = scored_world
    client.force_login(annotator)
    pages = crawl(client)
    assert len(pages) > 3  # the crawl really went somewhere
    assert leaks_in(pages) == []
    scoreish = re.compile(r"jury (mean|aggregate)|pass rate", re.IGNORECASE)
    assert [url for url, text in pages.items() if scoreish.search(str(text))] == []


@pytest.mark.django_db
def test_the_same_crawl_finds_model_names_for_a_researcher(client, scored_world):
    """The check above can fail: researchers are allowed to see what annotators must not."""
    researcher = make_user("sees-all", Role.RESEARCHER)
    client.force_login(researcher)
    pages = crawl(client)
    found = {s for text in pages.values() for s in forbidden_strings() if s in str(text)}
    assert "offline/careless" in found


@pytest.mark.django_db
def test_the_error_pages_an_annotator_can_reach_show_nothing_blinded(client, scored_world):
    """Every staff URL (run, conversation, reports, exports of the scored run) answers an
    annotator with the styled 403 page, and a guessed URL with the 404 page: neither names a
    model, a configuration or a judge's words."""
    annotator, refused_urls = scored_world
    client.force_login(annotator)
    responses = {url: client.get(url) for url in [*refused_urls, "/no/such/page/"]}
    assert {
        url: r.status_code for url, r in responses.items() if r.status_code not in (403, 404)
    } == {}
    pages = {url: _body(response) for url, response in responses.items()}
    assert all("way-back" in text for text in pages.values())  # the site's error pages
    assert leaks_in(pages) == []
