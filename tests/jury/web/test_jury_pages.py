"""Jury pages: rubrics, juries, launching a job, progress, reports and exports."""

import csv
import io
import itertools
import re
import statistics
from collections import defaultdict

import pytest
from django.urls import reverse

from accounts.models import Role, Track
from jury.models import ConversationResult, Jury, RubricVersion, ScoringJob
from jury.services import rubrics, scoring
from llm.engine.chat import ProviderError
from tests.conftest import make_user
from tests.jury.services.builders import AGENT_MODELS, scored
from tests.support.regions import region

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}

LABELS = [f"{model} · baseline" for model in AGENT_MODELS]
STAFF_ONLY = [
    ("jury:juries", {}),
    ("jury:reports", {}),
    ("jury:score_run", {"run_id": 1}),
    ("jury:job", {"pk": 1}),
    ("jury:job_retry", {"pk": 1}),
    ("jury:report", {"pk": 1}),
    ("jury:report_export", {"pk": 1, "table": "models", "suffix": "csv"}),
    ("jury:report_figure", {"pk": 1, "kind": "pass-rates", "fmt": "png"}),
    ("jury:sensitivity_figure", {"pk": 1, "attribute": "severity", "fmt": "pdf"}),
    ("jury:sensitivity", {"pk": 1}),
    ("jury:comparison", {"pk": 1}),
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
    assert len(callbacks) == 2  # the first window of judge calls, and the job's watch
    assert job.use_cache and len(scoring.pending_score_ids(job)) == 8 * 6 * 2
    sent = job.scores.exclude(lease_token="")
    assert sent.count() == job.concurrency < 8 * 6 * 2  # the rest follow as calls finish


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


class JudgeDown:
    def chat(self, request):
        raise ProviderError("upstream answered 503 three times", kind="server", status=503)


def poll_job(client, job) -> str:
    response = client.get(reverse("jury:job", args=[job.pk]), {"fragment": "progress"}, **HTMX)
    assert response.status_code == 200
    return response.content.decode()


def judge(score_ids, monkeypatch=None, router=None) -> None:
    """Execute these judge calls in this process, through `router` when given."""
    if router is not None:
        monkeypatch.setattr(scoring, "model_router", lambda use_cache, **prices: router)
    for score_id in score_ids:
        scoring.judge_score_execute(score_id)
    if router is not None:
        monkeypatch.undo()


def test_the_job_poll_refreshes_counts_and_failed_calls_and_stops_when_done(
    researcher_client, played_run, offline_jury, monkeypatch
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    total = job.scores.count()
    before = poll_job(researcher_client, job)
    assert "hx-trigger" in region(before, "job-progress").attrs
    assert "0 complete" in region(before, "job-counts").text
    assert "None so far" in region(before, "job-unusable").text
    first, second = played_run.conversations.scorable()[:2]
    failing = list(job.scores.filter(conversation=second).values_list("id", flat=True))
    judge(job.scores.filter(conversation=first).values_list("id", flat=True))
    judge(failing, monkeypatch, JudgeDown())
    during = poll_job(researcher_client, job)
    counts = region(during, "job-counts")
    assert counts.attrs["hx-swap-oob"] == "true"
    assert "1 complete · 1 incomplete" in counts.text
    errors = region(during, "job-unusable")
    assert errors.attrs["hx-swap-oob"] == "true"
    assert errors.text.count("upstream answered 503") == len(failing) == 12
    assert f"{len(failing)} of {total} judge calls failed" in region(during, "job-progress").text
    judge(scoring.pending_score_ids(job))
    after = poll_job(researcher_client, job)
    progress = region(after, "job-progress")
    assert "hx-trigger" not in progress.attrs  # the job ended: this was the final refresh
    assert progress.text.startswith("Finished")
    assert f"{len(failing)} of {total} judge calls failed" in progress.text
    counts = region(after, "job-counts").text
    assert "7 complete · 1 incomplete" in counts and "0 awaiting" in counts


def test_a_job_whose_every_call_failed_says_failed_with_the_reason(
    researcher_client, played_run, offline_jury, monkeypatch
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    total = job.scores.count()
    judge(scoring.pending_score_ids(job), monkeypatch, JudgeDown())
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.failure_reason.startswith(f"All {total} judge calls failed")
    cause = f"provider error (server): upstream answered 503 three times (x{total})"
    assert cause in job.failure_reason
    page = researcher_client.get(reverse("jury:job", args=[job.pk])).content.decode()
    progress = region(page, "job-progress").text
    assert progress.startswith("Failed") and job.failure_reason in progress
    assert "Finished" not in progress

    scoring.scoring_relaunch(job)
    judge(scoring.pending_score_ids(job))
    job.refresh_from_db()
    assert (job.status, job.failure_reason) == ("finished", "")


def test_the_jury_form_refuses_an_unknown_offline_judge_and_lists_the_valid_ones(
    researcher_client,
):
    form = {"name": "Typo", "judges": "offline/standard\noffline/nope",
            "pass_threshold": "3", "merge_mode": "mean"}  # fmt: skip
    form.update({f"weight_{rubric}": "1" for rubric in rubrics.current_weights()})
    response = researcher_client.post(reverse("jury:juries"), form)
    page = response.content.decode()
    assert response.status_code == 200 and not Jury.objects.filter(name="Typo").exists()
    assert "Line 2: unknown offline behaviour" in page
    assert "offline/standard, offline/lenient, offline/strict, offline/flaky" in page


def test_a_judge_missing_from_the_price_list_is_accepted_with_a_warning(researcher_client):
    form = {"name": "Unpriced", "judges": "offline/standard\nanthropic/claude-next",
            "pass_threshold": "3", "merge_mode": "mean"}  # fmt: skip
    form.update({f"weight_{rubric}": "1" for rubric in rubrics.current_weights()})
    response = researcher_client.post(reverse("jury:juries"), form, follow=True)
    page = response.content.decode()
    assert Jury.objects.get(name="Unpriced").judges == ["offline/standard", "anthropic/claude-next"]
    assert "anthropic/claude-next has no price" in page
    assert "offline/standard has no price" not in page


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


def _export(client, pk: int, table: str, suffix: str = "csv"):
    return client.get(
        reverse("jury:report_export", kwargs={"pk": pk, "table": table, "suffix": suffix})
    )


def _case_differences(job) -> list[float]:
    """Careful minus careless aggregate on every case both completed, straight from the rows."""
    by_case = defaultdict(dict)
    results = ConversationResult.objects.filter(job=job, complete=True)
    for result in results.select_related("conversation__run_agent"):
        by_case[result.conversation.entry_id][result.conversation.run_agent.label] = (
            result.aggregate
        )
    return [case[LABELS[0]] - case[LABELS[1]] for case in by_case.values() if len(case) == 2]


def test_the_paired_comparison_page_compares_agents_case_by_case(researcher_client, scored_job):
    differences = _case_differences(scored_job)
    wins = sum(d > 1e-9 for d in differences)
    losses = sum(d < -1e-9 for d in differences)
    page = researcher_client.get(reverse("jury:comparison", args=[scored_job.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and all(label in text for label in LABELS)
    assert f"{statistics.mean(differences):+.2f}" in text
    assert f"{wins} / {len(differences) - wins - losses} / {losses}" in text
    assert "Clinical Safety" in text and "Holm p" in text
    # Four cases: too few for the signed-rank test to reach 0.05, and the page says so.
    assert "fewer than 6 shared cases" in text


def test_the_paired_comparison_exports_one_row_per_score_and_pair(researcher_client, scored_job):
    response = _export(researcher_client, scored_job.pk, "comparison")
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["Score", "Model A", "Model B", "Cases", "Mean difference A - B (95% CI)",
                       "Wilcoxon p", "Holm p", "A wins", "Ties", "B wins", "Note"]  # fmt: skip
    assert [row[0] for row in rows[1:]] == ["Aggregate", "TC", "CS", "WA", "TQ", "CH", "CQ"]
    assert rows[1][1].startswith(LABELS[0]) and "scripted, not a model" in rows[1][1]
    assert rows[1][3] == str(len(_case_differences(scored_job)))
    for suffix in ("md", "tex"):
        assert _export(researcher_client, scored_job.pk, "comparison", suffix).status_code == 200


def test_the_model_table_marks_agents_indistinguishable_from_the_best(
    researcher_client, scored_job
):
    text = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    table = text[text.index('id="model-table"') : text.index("</table>")]
    rows = {label: table[table.index(label) :].split("</tr>")[0] for label in LABELS}
    assert ">best</span>" in rows[LABELS[0]]
    assert "≈ best" in rows[LABELS[1]]  # four shared cases cannot separate them
    exported = list(csv.reader(io.StringIO(_export(researcher_client, scored_job.pk,
                                                   "models").content.decode())))  # fmt: skip
    assert exported[0][-1] == "Versus best (paired)"
    assert [row[-1] for row in exported[1:]] == ["best", "indistinguishable"]


def test_the_model_table_is_compact_and_shows_pass_rates_on_request(researcher_client, scored_job):
    url = reverse("jury:report", args=[scored_job.pk])
    compact = researcher_client.get(url).content.decode()
    assert "pass % [95% CI]" not in compact and "Show pass-rate columns" in compact
    assert 'class="table compact model-table"' in compact
    full = researcher_client.get(url, {"pass_rates": "show"}).content.decode()
    assert full.count("pass % [95% CI]") == 6 and "Hide pass-rate columns" in full
    fragment = researcher_client.get(
        url, {"pass_rates": "show", "fragment": "models"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert fragment.lstrip().startswith('<div id="model-table"') and "<h1>" not in fragment
    assert fragment.count("pass % [95% CI]") == 6


def test_a_job_with_nothing_complete_has_an_empty_comparison(
    researcher_client, played_run, offline_jury
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    page = researcher_client.get(reverse("jury:comparison", args=[job.pk]))
    assert page.status_code == 200 and b"No conversation is complete yet" in page.content
    assert _export(researcher_client, job.pk, "comparison").status_code == 404


def test_sensitivity_charts_share_the_width_and_label_subgroups_in_words(
    researcher_client, scored_job
):
    text = researcher_client.get(reverse("jury:sensitivity", args=[scored_job.pk])).content
    text = text.decode()
    assert '<div class="chart-grid">' in text
    identities = set(scored_job.run.benchmark_set.entries.values_list("gender_identity", flat=True))
    assert identities and all("_" in identity for identity in identities)
    labels = set(re.findall(r'text-anchor="end"[^>]*>([^<]+)</text>', text))
    assert {identity.replace("_", " ") for identity in identities} <= labels
    assert not [label for label in labels if "_" in label]


def test_the_model_table_says_why_an_aggregate_interval_has_zero_width(
    researcher_client, scored_job
):
    # Every conversation of the first agent with the same aggregate: "4.50 [4.50, 4.50]" read
    # as certainty; the cell says why the interval has no width instead, and the export too.
    results = ConversationResult.objects.filter(job=scored_job, complete=True)
    results.filter(conversation__run_agent__label=LABELS[0]).update(aggregate=4.5)
    text = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    table = text[text.index('id="model-table"') : text.index("</table>")]
    notes = re.findall(r'<span class="ci">\(([^)]*)\)</span>', table)
    assert notes == ["zero width: every conversation has the same value"]
    assert not re.search(r"\[([\d.]+), \1\]", table)
    exported = _export(researcher_client, scored_job.pk, "models").content.decode()
    assert "4.50 (zero width: every conversation has the same value)" in exported


def test_the_model_table_says_when_an_aggregate_interval_was_cut_at_five(
    researcher_client, scored_job
):
    # A t interval reaching past 5 is cut there; the page showed "[4.55, 5.00]" as if it were
    # the interval's own end.
    results = ConversationResult.objects.filter(
        job=scored_job, complete=True, conversation__run_agent__label=LABELS[0]
    )
    for result, aggregate in zip(results, itertools.cycle([4.6, 5.0, 4.9]), strict=False):
        result.aggregate = aggregate
        result.save(update_fields=["aggregate"])
    text = researcher_client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    table = text[text.index('id="model-table"') : text.index("</table>")]
    assert re.search(
        r'<span class="ci">\[[\d.]+, 5.00\] \(interval cut at the end of the 1-5 scale\)</span>',
        table,
    )
