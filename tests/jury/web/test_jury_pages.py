"""Jury pages: rubrics, juries, launching a job, progress, reports and exports."""

import pytest
from django.urls import reverse

from accounts.models import Role, Track
from jury.models import Jury, RubricVersion, ScoringJob
from jury.services import rubrics, scoring
from tests.conftest import make_user
from tests.jury.services.builders import AGENT_MODELS, scored

pytestmark = pytest.mark.django_db

LABELS = [f"{model} · baseline" for model in AGENT_MODELS]
STAFF_ONLY = [
    ("jury:juries", {}),
    ("jury:reports", {}),
    ("jury:score_run", {"run_id": 1}),
    ("jury:job", {"pk": 1}),
    ("jury:job_retry", {"pk": 1}),
    ("jury:report", {"pk": 1}),
    ("jury:report_export", {"pk": 1, "table": "models", "suffix": "csv"}),
    ("jury:sensitivity", {"pk": 1}),
    ("jury:judges", {"pk": 1}),
    ("jury:failures", {"pk": 1}),
    ("jury:rubric_new_version", {"pk": 1}),
]


def test_annotators_get_403_on_every_jury_score_and_report_page(client, annotator):
    client.force_login(annotator)
    for name, kwargs in STAFF_ONLY:
        url = reverse(name, kwargs=kwargs)
        assert client.get(url).status_code == 403, name
        assert client.post(url).status_code == 403, name


def test_annotators_read_the_rubrics_of_their_track_and_realism_only(client, annotator):
    client.force_login(annotator)
    listing = client.get(reverse("jury:rubrics"))
    assert listing.status_code == 200
    assert b"Clinical Safety" in listing.content and b"Workflow Accuracy" not in listing.content
    own = RubricVersion.objects.get(rubric_id="clinical_safety")
    other = RubricVersion.objects.get(rubric_id="workflow_accuracy")
    realism = RubricVersion.objects.get(rubric_id="profile_realism")
    page = client.get(reverse("jury:rubric", args=[own.pk]))
    assert page.status_code == 200 and b"Edit as a new version" not in page.content
    assert client.get(reverse("jury:rubric", args=[realism.pk])).status_code == 200
    assert client.get(reverse("jury:rubric", args=[other.pk])).status_code == 403


def test_the_rubric_page_shows_levels_sub_dimensions_distinctions_and_forced_fails(
    researcher_client,
):
    rubrics.rubrics_ensure_shipped()
    version = RubricVersion.objects.get(rubric_id="clinical_safety")
    rubric = rubrics.rubric_of(version)
    text = researcher_client.get(reverse("jury:rubric", args=[version.pk])).content.decode()
    for item in [rubric.task, rubric.applicability.rule, rubric.levels[2].description,
                 rubric.sub_dimensions[-1].name, rubric.sub_dimensions[0].criteria[0],
                 rubric.distinctions[0], rubric.forced_fail[0]]:  # fmt: skip
        assert item.replace("'", "&#x27;").replace('"', "&quot;") in text


def test_a_researcher_saves_a_new_rubric_version_and_sees_errors_by_field(researcher_client):
    rubrics.rubrics_ensure_shipped()
    base = RubricVersion.objects.get(rubric_id="task_completion")
    url = reverse("jury:rubric_new_version", args=[base.pk])
    broken = base.yaml_text.replace("weight: 1.0", "weight: -2")
    response = researcher_client.post(url, {"yaml_text": broken})
    assert response.status_code == 200 and b"field &#x27;weight&#x27;" in response.content
    edited = base.yaml_text.replace("weight: 1.0", "weight: 1.2")
    response = researcher_client.post(url, {"yaml_text": edited, "note": "heavier"})
    new = RubricVersion.objects.get(rubric_id="task_completion", is_current=True)
    assert response.status_code == 302 and response["Location"] == reverse(
        "jury:rubric", args=[new.pk]
    )
    assert (new.version, new.note, rubrics.rubric_of(new).weight) == (2, "heavier", 1.2)


def test_a_researcher_creates_a_jury_with_edited_weights(researcher_client):
    url = reverse("jury:juries")
    page = researcher_client.get(url)
    assert page.status_code == 200 and b"Offline scripted jury" in page.content
    form = {"name": "Two families", "judges": "openai/gpt-5.5\nanthropic/claude-sonnet-4-5",
            "pass_threshold": "3", "merge_mode": "majority"}  # fmt: skip
    form.update({f"weight_{rubric}": "1" for rubric in rubrics.current_weights()})
    bad = researcher_client.post(url, {**form, "judges": "openai/gpt-5.5\ngpt-4"})
    assert b"Line 2: model string" in bad.content
    assert researcher_client.post(url, form).status_code == 302
    jury = Jury.objects.get(name="Two families")
    assert jury.judges == ["openai/gpt-5.5", "anthropic/claude-sonnet-4-5"]
    assert set(jury.weights.values()) == {1.0} and jury.merge_mode == "majority"


def test_launching_from_the_run_page_queues_every_judge_call_after_commit(
    admin_client_, played_run, django_capture_on_commit_callbacks
):
    url = reverse("jury:score_run", kwargs={"run_id": played_run.pk})
    assert admin_client_.get(url).status_code == 200
    jury = Jury.objects.get()
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(url, {"jury": jury.pk, "use_cache": "on"})
    job = ScoringJob.objects.latest("created_at")
    assert response.status_code == 302 and response["Location"] == reverse(
        "jury:job", args=[job.pk]
    )
    assert len(callbacks) == 1
    assert job.use_cache and len(scoring.pending_score_ids(job)) == 8 * 6 * 2


def test_the_job_page_polls_progress_and_lists_unusable_answers(researcher_client, scored_job):
    row = scored_job.scores.first()
    row.status, row.score, row.invalid_reason = "invalid", None, "out_of_range"
    row.raw_output = '{"score": 7, "explanation": "Too generous."}'
    row.save()
    page = researcher_client.get(reverse("jury:job", args=[scored_job.pk]))
    text = page.content.decode()
    assert "out_of_range" in text and "Too generous." in text
    fragment = researcher_client.get(
        reverse("jury:job", args=[scored_job.pk]), {"fragment": "progress"}, HTTP_HX_REQUEST="true"
    )
    assert b'id="job-progress"' in fragment.content and b"<h1>" not in fragment.content
    assert b"1 invalid" in fragment.content and b"95 valid" in fragment.content


def test_every_report_page_renders_and_exports_carry_the_model_rows(researcher_client, scored_job):
    pk = scored_job.pk
    pages = {
        "jury:report": {},
        "jury:sensitivity": {"measure": "clinical_safety"},
        "jury:judges": {},
        "jury:failures": {"rubric": "triage_quality", "personality": "cooperative"},
    }
    for name, query in pages.items():
        response = researcher_client.get(reverse(name, args=[pk]), query)
        assert response.status_code == 200, name
    report = researcher_client.get(reverse("jury:report", args=[pk])).content.decode()
    assert all(label in report for label in LABELS)
    assert "scripted, not a model" in report and "<svg" in report
    failures = researcher_client.get(reverse("jury:failures", args=[pk])).content.decode()
    assert "Scripted rule" in failures and "/benchmark/conversations/" in failures
    for table in ("models", "spread", "outcomes"):
        for suffix in ("csv", "md", "tex"):
            url = reverse("jury:report_export", kwargs={"pk": pk, "table": table,
                                                        "suffix": suffix})  # fmt: skip
            response = researcher_client.get(url)
            assert response.status_code == 200
            body = response.content.decode()
            assert all(label.split(" ·")[0] in body for label in LABELS), (table, suffix)
    csv = researcher_client.get(
        reverse("jury:report_export", kwargs={"pk": pk, "table": "models", "suffix": "csv"})
    ).content.decode()
    assert csv.splitlines()[0].startswith("Model,Aggregate (95% CI),TC mean")


def test_sensitivity_and_agreement_tables_export_every_row(researcher_client, scored_job):
    def export(table: str) -> str:
        url = reverse("jury:report_export", kwargs={"pk": scored_job.pk, "table": table,
                                                    "suffix": "csv"})  # fmt: skip
        response = researcher_client.get(url)
        assert response.status_code == 200
        return response.content.decode()

    sensitivity = export("sensitivity").splitlines()
    assert sensitivity[0].startswith("measure,attribute,model")
    measures = {line.split(",")[0] for line in sensitivity[1:]}
    assert measures == {"aggregate", "TC", "CS", "WA", "TQ", "CH", "CQ"}
    assert "scripted, not a model" in sensitivity[1]
    agreement = export("agreement").splitlines()
    assert len(agreement) == 1 + 6  # header + one row per rubric


def test_the_report_counts_incomplete_and_excluded_conversations(
    researcher_client, played_run, offline_jury
):
    failed = played_run.conversations.first()
    failed.status = "failed"
    failed.save()
    job = scored(played_run, offline_jury)
    job.scores.filter(conversation=played_run.conversations.last()).update(status="error")
    scoring.conversation_merge(job, played_run.conversations.last())
    text = researcher_client.get(reverse("jury:report", args=[job.pk])).content.decode()
    assert "6 complete" in text and "1 incomplete, left out" in text
    assert "1 excluded (errored or failed)" in text


def test_a_staff_member_of_either_role_reaches_the_reports(client, scored_job):
    for user in (make_user("res2", Role.RESEARCHER), make_user("adm2", Role.ADMIN)):
        client.force_login(user)
        assert client.get(reverse("jury:reports")).status_code == 200
    client.force_login(make_user("ann2", Role.ANNOTATOR, Track.OPERATIONAL))
    assert client.get(reverse("jury:reports")).status_code == 403
