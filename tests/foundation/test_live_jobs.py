"""Every job page draws its live region with the one template part and polls by the one rule
(common/live_jobs.py), so no page can keep polling a finished job or drift from the others."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from common import live_jobs
from common.query import BadQuery

TEMPLATES = Path(settings.BASE_DIR) / "templates"
# The pages that follow work done by the workers or by the clinicians.
JOB_PAGES = (
    "benchmark/run_detail.html",
    "benchmark/set_detail.html",
    "jury/job_detail.html",
    "rubric_lab/pipeline_detail.html",
    "rubric_lab/sensitivity_detail.html",
    "rubric_lab/coverage_detail.html",
    "rubric_lab/refine_detail.html",
    "rubric_lab/ablation_detail.html",
    "alignment/jury_comparison.html",
    "annotation/staff/study_detail.html",
)
HAND_WRITTEN_POLL = re.compile(r'hx-trigger="every ')


@pytest.mark.parametrize("page", JOB_PAGES)
def test_each_job_page_draws_its_live_region_with_the_shared_part(page):
    text = (TEMPLATES / page).read_text()
    assert '{% include "includes/live_job.html"' in text
    assert not HAND_WRITTEN_POLL.search(text)


def request(query: str = "", htmx: bool = False):
    made = RequestFactory().get(f"/runs/7/{query}", **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
    made.htmx = HtmxDetails(made)
    return made


def test_only_an_htmx_request_for_the_progress_fragment_is_a_poll():
    assert live_jobs.is_poll(request("?fragment=progress", htmx=True))
    assert not live_jobs.is_poll(request("?fragment=progress"))
    assert not live_jobs.is_poll(request(htmx=True))


def test_it_rejects_a_fragment_the_page_does_not_have():
    with pytest.raises(BadQuery):
        live_jobs.is_poll(request("?fragment=nonsense"))


def test_the_poll_keeps_the_filters_when_asked():
    kept = live_jobs.poll_url(request("?agent=3&page=9"), keep={"page": 2})
    assert kept == "/runs/7/?agent=3&page=2&fragment=progress"
    assert live_jobs.poll_url(request("?agent=3")) == "/runs/7/?fragment=progress"


def test_a_region_polls_only_while_its_job_runs():
    assert live_jobs.is_running("running")
    assert not any(map(live_jobs.is_running, ["paused", "finished", "failed", "cancelled"]))
