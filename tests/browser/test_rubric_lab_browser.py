"""The rubric lab in a real browser: rubrics generated from the web while the page watches
the progress bar reach done, the pipeline page read top to bottom, and a sensitivity study
started from the web whose page shows its charts once the pairs are judged.

The work runs in this process (as a worker would, with the lease tokens the web launch sent),
the way the other live-page tests do; the page only polls."""

import re

import pytest

from rubric_lab.engine.pipeline import STAGES
from rubric_lab.models import GenerationJob, SensitivityStudy
from rubric_lab.services import pipeline, sensitivity
from tests.support.builders import enriched_set, launched_run, played

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 20_000  # a few polls (every 2 s) on a busy machine


@pytest.fixture
def lab_run(transactional_db):
    return played(launched_run(enriched_set(name="Lab browser set", size=2), name="Lab run"))


def polling_stopped(page, selector: str) -> bool:
    return page.locator(selector).get_attribute("hx-trigger") is None


def test_rubrics_generated_from_the_web_then_a_sensitivity_study_with_its_charts(
    page, login, people, lab_run, live_server
):
    login("rita")
    page.goto(f"{live_server.url}/lab/pipelines/new/?run={lab_run.pk}")
    page.fill("input[name=limit]", "2")
    page.fill("input[name=judge_model]", "")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/lab/pipelines/\d+/$"))
    job = GenerationJob.objects.get()
    progress = page.locator("#job-live .progress")
    assert progress.get_attribute("aria-valuenow") == "0"
    assert progress.get_attribute("aria-valuemax") == "2"

    for generation_id, token in job.generations.values_list("pk", "lease_token"):
        assert token and pipeline.generation_execute(generation_id, token)
    page.locator("#job-live h3", has_text="Finished").wait_for(timeout=TIMEOUT_MS)
    assert progress.get_attribute("aria-valuenow") == "2"
    assert page.locator("#job-live .badge", has_text="2 rubrics").is_visible()
    assert polling_stopped(page, "#job-live")

    page.locator("#job-live a[href*='/lab/generations/']").first.click()
    page.wait_for_url(re.compile(r"/lab/generations/\d+/$"))
    stages = page.locator("ol.pipeline > li[id^=stage-]")
    assert stages.count() == len(STAGES)
    assert [stages.nth(i).get_attribute("id") for i in range(len(STAGES))] == [
        f"stage-{name}" for name in STAGES
    ]  # top to bottom, as the pipeline runs
    output = page.locator("#stage-audit details").filter(has_text="Output")
    output.locator("summary").click()
    assert output.locator("pre").first.get_by_text('"criteria"').is_visible()
    page.locator("a.button", has_text="The instance rubric").click()
    assert page.locator("table.table tbody tr[id^=criterion-]").count() >= 5

    page.goto(f"{live_server.url}/lab/sensitivity/")
    page.select_option("select[name=run]", str(lab_run.pk))
    page.select_option("select[name=setup]", "instance")
    page.select_option("select[name=generation_job]", str(job.pk))
    page.fill("input[name=max_cases]", "2")
    page.click("form.card button[type=submit]")
    page.wait_for_url(re.compile(r"/lab/sensitivity/\d+/$"))
    study = SensitivityStudy.objects.get()
    assert page.locator("#progress h3", has_text="Running").is_visible()

    # The first window went to the workers with tokens; the rest nobody holds yet.
    for pair_id, token in study.pairs.values_list("pk", "lease_token"):
        assert sensitivity.near_miss_execute(pair_id, token or None)
    # The poll that sees the study finished reloads the page: results and charts appear.
    page.locator("svg.chart").first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#progress h3", has_text="Finished").is_visible()
    assert page.locator("svg.chart").count() == 2
    assert page.locator("h3", has_text="AUROC").is_visible()
    assert polling_stopped(page, "#progress")
    assert page.console_errors == []
