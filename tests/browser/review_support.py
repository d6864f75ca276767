"""The review screen's browser tests share a scored run, a target study drawn from it and the
clinician who scores it, and a few steps: open the first item from the queue with the keyboard,
wait for a save, read the checked scores."""

import re

from playwright.sync_api import expect

from accounts.models import Role, Track, User
from annotation.services.studies import StudySpec, study_create
from jury.services import juries, scoring
from jury.services.rubrics import current_versions
from tests.annotation.conftest import enrol
from tests.conftest import make_user
from tests.support.builders import enriched_set, launched_run, played

PANEL_SIZE = 5  # three clinical rubrics and the two realism rubrics


def scored_job(size: int = 2):
    run = played(launched_run(enriched_set(name="Review set", size=size), name="Review run"))
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    return job


def new_study(job, *, name: str, kind: str = "target", size: int = 2):
    """A study of the "Browser" project, every annotator made so far enrolled in it."""
    spec = StudySpec(
        project_name="Browser", name=name, kind=kind, sample_size=size,
        round_number=1 if kind == "calibration" else None,
    )  # fmt: skip
    study = study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())
    enrol(study, *User.objects.filter(role=Role.ANNOTATOR).exclude(
        pk__in=study.project.members.values("annotator")
    ))  # fmt: skip
    return study


def target_study_for_nora():
    make_user("nora", Role.ANNOTATOR, Track.CLINICAL)
    return new_study(scored_job(), name="Keyboard study")


def open_first_item(page, live_server, study) -> None:
    """From the queue page, Enter on the Start button (it has the focus once loaded)."""
    page.goto(f"{live_server.url}/annotation/studies/{study.pk}/queue/")
    start = page.get_by_role("button", name=re.compile("^(Start|Resume)$"))
    start.wait_for()
    start.press("Enter")
    page.wait_for_url(re.compile("/annotation/items/"))
    page.wait_for_load_state()


def saved(page) -> None:
    expect(page.locator("#save-status")).to_contain_text("Saved")


def checked_scores(page) -> list[str]:
    checked = page.locator("#annotation-form .scores input[type=radio]:checked")
    return [radio.get_attribute("value") for radio in checked.all()]
