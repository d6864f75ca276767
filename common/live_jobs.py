"""Live-job pages: a page that follows work done by the workers (a benchmark set's enrichment, a
run, a scoring job, a rubric lab job, a re-score, a clinician study) shows a progress region that
polls itself with htmx while the work goes on. Every such page decides here whether a request is
that poll, what the poll asks for and how it is answered; templates/includes/live_job.html draws
the region. So a page cannot poll forever, nor stop polling before the work ends, on its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common.query import query_choice

# ?fragment=progress asks for the live region alone.
POLL_FRAGMENT = "progress"
POLL_EVERY = "2s"
RUNNING = "running"


@dataclass(frozen=True)
class LiveRegion:
    """What templates/includes/live_job.html needs to draw a region that polls itself."""

    id: str
    url: str
    polling: bool
    every: str = POLL_EVERY
    # Other inputs the poll sends along (the page's filters, its page number).
    include: str = ""


def is_running(status: str) -> bool:
    """Whether a job in `status` still has work the workers are doing (so its page polls)."""
    return status == RUNNING


def is_poll(request: HttpRequest, fragments: Sequence[str] = (POLL_FRAGMENT,)) -> bool:
    """An htmx request for the live region alone. `fragments` are every region the page can
    answer alone: any other value is a bad query, whoever asks. A plain request with the same
    query (a bookmark, no JavaScript) gets the whole page."""
    return query_choice(request.GET, "fragment", fragments) == POLL_FRAGMENT and bool(request.htmx)


def poll_url(request: HttpRequest, keep: Mapping[str, object] | None = None) -> str:
    """This page's address for its poll. With `keep`, the poll also carries the page's current
    query (filters) and those values, so it redraws what is shown now."""
    if keep is None:
        return f"{request.path}?fragment={POLL_FRAGMENT}"
    query = request.GET.copy()
    for name, value in {**keep, "fragment": POLL_FRAGMENT}.items():
        query[name] = str(value)
    return f"{request.path}?{query.urlencode()}"


def live_region(
    request: HttpRequest,
    region_id: str,
    *,
    polling: bool,
    every: str = POLL_EVERY,
    keep: Mapping[str, object] | None = None,
    include: str = "",
) -> LiveRegion:
    url = poll_url(request, keep)
    return LiveRegion(region_id, url, polling, every=every, include=include)


def live_page(
    request: HttpRequest,
    template: str,
    context: dict,
    *,
    region: str,
    reload_when_done: bool = False,
    fragments: Sequence[str] = (POLL_FRAGMENT,),
) -> HttpResponse:
    """The whole page, or for its poll only the partial `region` of `template`. With
    `reload_when_done`, the poll that finds the work over also reloads the page, so results the
    region does not hold (tables, charts) appear without the user reloading. Other live
    regions the answer carries swap themselves in out of band (`oob` in their partials)."""
    if not is_poll(request, fragments):
        return render(request, template, context)
    response = render(request, f"{template}#{region}", {**context, "oob": True})
    if reload_when_done and not context["live"].polling:
        response["HX-Refresh"] = "true"
    return response
