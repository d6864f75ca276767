"""HTML in user or model text is shown as text on every page that shows it: a script tag and an
img onerror attribute put into a patient story, a tool result, an annotator's feedback and
comment, a theme name, a rubric's text and a distribution are rendered in Chromium; no dialog
opens, no such element exists in the page, and the payload is readable as text. (The site's
script policy would also stop an inline script; the DOM check fails on broken escaping alone.)
"""

import pytest
import yaml
from django.urls import reverse

from accounts.models import Role, Track
from alignment.models import ItemTheme, Theme
from annotation.services import queue
from annotation.services.annotations import annotation_submit
from annotation.services.studies import StudySpec, study_create
from benchmark.models import TraceEvent
from benchmark.services import cases
from jury.services import juries, scoring
from jury.services.rubrics import current_versions, rubric_version_create
from tests.annotation.conftest import enrol
from tests.annotation.test_annotation_writes import full_draft
from tests.conftest import make_user
from tests.support.builders import enriched_set, launched_run, played

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = '<script>alert("xss-script")</script><img src="x" id="xss-img" onerror="alert(1)">'


@pytest.fixture
def tainted(transactional_db):
    run = played(launched_run(enriched_set(name="Escaping set", size=1), name="Escaping run"))
    conversation = run.conversations.first()
    entry = conversation.entry
    entry.story = f"The patient writes {PAYLOAD} in the portal."
    entry.save(update_fields=["story"])
    TraceEvent.objects.filter(conversation=conversation, kind="tool_result").update(
        content=f'{{"note": "{PAYLOAD}"}}'
    )
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    nurse = make_user("nurse", Role.ANNOTATOR, Track.CLINICAL)
    spec = StudySpec(project_name="Escaping", name="Escaping study", kind="target", sample_size=1)
    study = study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())
    enrol(study, nurse)
    assignment = queue.next_assignment(study=study, annotator=nurse)
    draft = full_draft(assignment, 2)
    draft.feedback, draft.overall_comment = {"clinical_safety": PAYLOAD}, PAYLOAD
    annotation_submit(assignment, draft=draft, version=0, actor=nurse)
    theme = Theme.objects.create(name=PAYLOAD, project=study.project)
    ItemTheme.objects.create(item=assignment.item, rubric_id="clinical_safety", theme=theme)
    safety = next(v for v in current_versions() if v.rubric_id == "clinical_safety")
    fields = yaml.safe_load(safety.yaml_text)
    fields["task"] = f"{PAYLOAD} {fields['task']}"
    rubric = rubric_version_create(
        rubric_id="clinical_safety", yaml_text=yaml.safe_dump(fields, sort_keys=False),
        note=PAYLOAD,
    )  # fmt: skip
    distribution = cases.distribution_create(
        name=f"Tainted {PAYLOAD}",
        yaml_text=f"# {PAYLOAD}\n{cases.distribution_default_ensure().yaml_text}",
    )
    return {
        "rita": [
            reverse("benchmark:entry", args=[entry.pk]),
            reverse("benchmark:conversation", args=[conversation.public_id]),
            reverse("annotation:staff_assignment", args=[assignment.public_id]),
            reverse("jury:rubric", args=[rubric.pk]),
            reverse("benchmark:distribution", args=[distribution.pk]),
            reverse("benchmark:distributions"),
            reverse("alignment:disagreements", args=[study.pk]) + "?synthetic=1",
        ],
        "nurse": [reverse("annotation:review", args=[assignment.public_id])],
    }


def test_no_page_runs_or_builds_markup_from_user_or_model_text(page, login, live_server, tainted):
    make_user("rita", Role.RESEARCHER)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for username, urls in tainted.items():
        page.context.clear_cookies()
        login(username)
        for url in urls:
            page.goto(live_server.url + url)
            page.wait_for_load_state("load")
            assert page.locator("#xss-img").count() == 0, url
            assert "xss-script" not in "".join(
                s.inner_text() for s in page.locator("script").all()
            ), url
            assert '<script>alert("xss-script")</script>' in page.locator("body").text_content(), (
                url
            )
    assert dialogs == []
