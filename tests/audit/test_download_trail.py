"""Every download leaves who took which file, and when, in the audit trail: every URL of the
access table is opened and each attachment it answers with must have written its event, and
no module but audit/downloads.py builds an attachment."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from tests.foundation.access_table import PAGES, access_world
from tests.support.layers import PROJECT_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
# Downloads chosen by the query string rather than the path.
QUERIES = {"benchmark:set_report": "?format=csv"}
# What the walk must find: a page that stops being a download must be noticed here.
DOWNLOADS = {
    "benchmark:set_report": "table", "benchmark:run_export": "conversations",
    "jury:report_export": "table", "rubric_lab:sensitivity_export": "table",
    "rubric_lab:coverage_export": "table", "rubric_lab:coverage_compare_export": "table",
    "rubric_lab:refine_export": "table",
    "annotation:staff_study_export": "annotations", "alignment:archive_download": "archive",
    "alignment:export": "table", "alignment:figure": "figure",
    "alignment:loop_comparison_csv": "table", "alignment:table_export": "table",
    "alignment:drift_export": "table", "alignment:jury_history_export": "table",
    "api:study_annotations": "annotations", "api:archive_download": "archive",
    "benchmark:run_export_parquet": "conversations", "jury:job_scores_export": "table",
    "api:run_export": "conversations", "api:judge_scores_export": "table",
    "benchmark:run_manifest": "manifest", "api:run_manifest": "manifest",
    "api:report_table_export": "table", "api:study_table": "table",
    "api:study_figure": "figure", "api:study_drift_table": "table",
    "api:study_jury_history_table": "table", "api:study_jury_comparison_table": "table",
    "api:lab_coverage_cases_export": "table", "api:lab_coverage_compare_export": "table",
    "api:lab_coverage_export": "table", "api:lab_generation_rubrics_export": "table",
    "api:lab_refine_export": "table", "api:lab_refinements_export": "table",
    "api:lab_sensitivity_export": "table", "api:lab_sensitivity_pairs_export": "table",
    "api:report_bundle_download": "report_bundle",
}  # fmt: skip


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    yield from access_world(django_db_blocker)


def attachment_name(response) -> str | None:
    found = re.match(r'attachment; filename="(.+)"', response.get("Content-Disposition", ""))
    return found.group(1) if found else None


@pytest.mark.django_db
def test_every_download_of_the_access_table_is_recorded_with_its_person(client, world):
    users, objects = world
    downloaded = {}
    for page in PAGES:
        user = users[page.roles[-1]]
        client.force_login(user)
        url = reverse(page.name, kwargs=page.kwargs(objects)) + QUERIES.get(page.name, "")
        newest = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        response = client.get(url)
        name = attachment_name(response)
        if response.streaming:  # read to the end, so the client closes the file
            b"".join(response.streaming_content)
        if name is None:
            continue
        recorded = AuditEvent.objects.filter(pk__gt=newest, action__startswith="download.")
        assert [(e.actor, e.after["file"]) for e in recorded] == [(user, name)], page.name
        downloaded[page.name] = recorded.get().action.removeprefix("download.")
    assert downloaded == DOWNLOADS


def test_no_module_but_the_download_helper_makes_an_attachment():
    pattern = re.compile(r"Content-Disposition|as_attachment|FileResponse\(")
    sources = [
        path.relative_to(ROOT)
        for folder in PROJECT_PACKAGES
        for path in (ROOT / folder).rglob("*.py")
    ]
    making = [path for path in sources if pattern.search((ROOT / path).read_text())]
    assert len(sources) > 100 and making == [Path("audit/downloads.py")]
