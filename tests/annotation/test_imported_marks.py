"""Imported annotations are marked imported wherever annotations are listed: the exports,
the annotation page, the study dashboard, the round report, the alignment report and its
disagreement rows, and the annotator's own list."""

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.services.exchange import annotations_import, export_text
from tests.annotation.staff_support import annotate
from tests.annotation.test_exchange import as_csv, paper_rows
from tests.support.regions import region

pytestmark = pytest.mark.django_db
BADGE = "imported from a file"  # the badge's title


@pytest.fixture
def imported(study, researcher, clinicians):
    """Item 1: paper-doc's annotation imported from a file, and clinician 1's served one;
    item 2: clinician 0's work imported under their own account (confirmed). Item 1's
    annotations by username."""
    first, second = study.items.order_by("position")[:2]
    annotate(first, clinicians[1])
    rows = paper_rows(first) + paper_rows(second, annotator=clinicians[0].username)
    annotations_import(study, data=as_csv(rows), filename="paper.csv", actor=researcher,
                       confirmed_accounts={clinicians[0].username})  # fmt: skip
    return {a.annotator.username: a for a in first.assignments.select_related("annotator")}


def test_exports_say_which_annotations_were_imported(study, imported, clinicians):
    rows = list(csv.DictReader(io.StringIO(export_text(study, "csv"))))
    by_person = {(r["annotator"], r["imported"]) for r in rows}
    assert by_person == {("paper-doc", "true"), (clinicians[0].username, "true"),
                         (clinicians[1].username, "false")}  # fmt: skip
    lines = [json.loads(line) for line in export_text(study, "jsonl").splitlines()]
    assert {line["imported"] for line in lines if line["annotator"] == "paper-doc"} == {True}


def test_the_annotation_page_marks_imported_work(researcher_client, imported, clinicians):
    def page(username):
        url = reverse("annotation:staff_assignment", args=[imported[username].public_id])
        return researcher_client.get(url).content.decode()

    paper = page("paper-doc")
    assert 'id="imported-mark"' in paper and "imported with an annotation file" in paper
    assert 'id="imported-mark"' not in page(clinicians[1].username)


def test_the_study_dashboard_counts_imported_work_per_annotator(researcher_client, study,
                                                                imported):  # fmt: skip
    body = researcher_client.get(reverse("annotation:staff_study", args=[study.pk])).content
    text = region(body.decode(), "annotator-progress").text
    assert "paper-doc 1 imported clinical" in text and "clinical-0 1 imported clinical" in text
    assert "clinical-1 clinical" in text  # served work: no mark


def test_the_round_report_marks_annotators_whose_work_was_imported(researcher_client, study,
                                                                   imported):  # fmt: skip
    body = researcher_client.get(reverse("annotation:staff_round_report", args=[study.pk]))
    text = region(body.content.decode(), "report-annotators").text
    assert "paper-doc imported" in text and "clinical-0 imported" in text
    assert "clinical-1 imported" not in text and "clinical-1" in text


def test_alignment_pages_mark_imported_ratings(researcher_client, study, imported):
    report = researcher_client.get(reverse("alignment:report", args=[study.pk])).content.decode()
    assert "paper-doc <span" in report and BADGE.replace(" from a file", "") in report
    rows = researcher_client.get(reverse("alignment:disagreements", args=[study.pk]))
    clinicians = [li.split("</li>")[0] for li in rows.content.decode().split("<li><strong>")[1:]]
    paper = [c for c in clinicians if c.startswith("paper-doc</strong>")]
    served = [c for c in clinicians if c.startswith("clinical-1</strong>")]
    assert paper and all(BADGE in c for c in paper)
    assert served and not any(BADGE in c for c in served)


def test_an_annotator_sees_their_imported_work_marked_in_their_list(client, study, imported,
                                                                    clinicians):  # fmt: skip
    client.force_login(clinicians[0])
    page = client.get(reverse("annotation:queue", args=[study.pk])).content.decode()
    assert "imported from a file by a researcher" in page
