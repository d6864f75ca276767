"""The alignment report and a per-rubric page in a real browser: figures drawn inline, the
planner swapped by htmx, a theme tagged in place, no console error under the site's CSP."""

import pytest
from playwright.sync_api import expect

from accounts.models import Track
from annotation.services.studies import StudySpec, study_create
from jury.services import juries, scoring
from jury.services.rubrics import current_versions
from tests.alignment.conftest import annotate_study
from tests.annotation.conftest import annotators
from tests.browser.test_accessibility import violations
from tests.support.builders import enriched_set, launched_run, played

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def annotated(transactional_db):
    run = played(launched_run(enriched_set(name="Alignment set", size=2), name="Alignment run"))
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    spec = StudySpec(project_name="Browser", name="Agreement study", kind="target", sample_size=4)
    study = study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())
    people = {track: annotators(track, 2) for track in (Track.CLINICAL, Track.OPERATIONAL)}
    annotate_study(study, job, people)
    return study


def test_the_report_and_a_rubric_page_draw_their_figures(
    page, login, people, annotated, live_server
):
    login("rita")
    page.goto(f"{live_server.url}/alignment/studies/{annotated.pk}/")
    expect(page.locator("#agreement-table tbody tr").first).to_be_visible()
    page.select_option("#planner select[name=width]", "0.05")
    expect(page.locator("#planner select[name=width]")).to_have_value("0.05")
    # The clinicians' drift over the project's rounds loads after the page, in place.
    expect(page.locator("#drift h3")).to_have_text("Drift over the rounds of Browser")
    expect(page.locator("#drift-table tbody tr")).to_have_count(4)
    page.locator("#agreement-table a", has_text="Clinical Safety").click()
    page.wait_for_url("**/rubrics/clinical_safety/")
    charts = page.locator("#rubric-charts svg")
    expect(charts).to_have_count(3)
    box = charts.first.bounding_box()
    assert box["width"] > 200 and box["height"] > 150  # drawn, not collapsed
    expect(page.locator("#judge-bias-table tbody tr")).to_have_count(3)  # two judges, the jury
    assert page.console_errors == []


def test_a_theme_is_tagged_in_place(page, login, people, annotated, live_server):
    login("rita")
    page.goto(f"{live_server.url}/alignment/studies/{annotated.pk}/disagreements/")
    cell = page.locator(".themes").first
    cell.locator("input[name=name]").fill("Rubric ambiguity: follow-up")
    cell.get_by_role("button", name="Tag").click()
    expect(page.locator(".themes").first.locator(".badge")).to_contain_text("Rubric ambiguity")
    assert page.url.endswith("/disagreements/")  # swapped in place, no navigation
    assert page.console_errors == []


def test_the_calibration_and_jury_history_pages_pass_the_accessibility_check(
    page, login, people, annotated, live_server
):
    login("rita")
    found = {}
    for name in ("calibration", "jury-history"):
        page.goto(f"{live_server.url}/alignment/studies/{annotated.pk}/{name}/")
        expect(page.locator("h1")).to_be_visible()
        found[name] = violations(page)
    assert {name: problems for name, problems in found.items() if problems} == {}
    assert page.console_errors == []
