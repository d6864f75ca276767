"""Export annotations as CSV / JSONL; import them (all or nothing, every problem named)."""

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, AssignmentHistory, HistoryKind, StudyStatus
from annotation.services.exchange import ImportRejected, annotations_import, export_text
from benchmark.models import TraceEvent
from tests.annotation.conftest import new_study
from tests.annotation.staff_support import CLINICAL_PANEL, annotate, full_scores

pytestmark = pytest.mark.django_db
User = get_user_model()


def events_of(item, count=2) -> list[str]:
    return list(
        TraceEvent.objects.filter(conversation=item.conversation)
        .order_by("event_id")
        .values_list("event_id", flat=True)[:count]
    )


@pytest.fixture
def annotated(study, clinicians, operators):
    """Two clinicians and an operator on item 1 (feedback pointing at trace events, a
    comment), a simulated clinician on item 2, and an invalidated annotation on item 2."""
    first, second = study.items.all()[:2]
    links = events_of(first)
    annotate(
        first, clinicians[0], scores=full_scores(study, "clinical", 4, clinical_safety=2),
        feedback={"clinical_safety": "Booked before confirming, \"urgent\", twice"},
        event_links={"clinical_safety": links}, overall_comment="Careful, mostly.",
        seconds_on_task=200,
    )  # fmt: skip
    annotate(first, clinicians[1], seconds_on_task=90)
    annotate(first, operators[0], scores=full_scores(study, "operational", 5))
    annotate(second, clinicians[2], synthetic=True)
    annotate(second, clinicians[0], invalidated_at=timezone.now(), invalidated_reason="wrong item")
    return study, links


def csv_rows(text: str) -> list[dict]:
    """The rows of an exported CSV, past the comment line that notes synthetic work."""
    lines = text.splitlines(keepends=True)
    return list(csv.DictReader(io.StringIO("".join(lines[text.startswith("#") :]))))


# --- export --------------------------------------------------------------------------------


def test_the_csv_export_has_one_row_per_assignment_and_rubric_with_versions_and_links(annotated):
    study, links = annotated
    rows = csv_rows(export_text(study, "csv"))
    assert len(rows) == 4 * 5 + 5  # four clinical assignments x 5 rubrics, one operational x 5
    safety = next(
        r for r in rows if r["annotator"] == "clinical-0" and r["rubric_id"] == "clinical_safety"
        and r["invalidated"] == "false"
    )  # fmt: skip
    assert safety["score"] == "2" and safety["rubric_version"] == "1"
    assert safety["event_ids"] == " ".join(links) and len(links) == 2
    assert safety["feedback"] == 'Booked before confirming, "urgent", twice'
    assert safety["overall_comment"] == "Careful, mostly." and safety["seconds_on_task"] == "200"
    assert (safety["study"], safety["project"], safety["kind"]) == (
        "Target study",
        "Pilot",
        "target",
    )
    assert safety["licensed"] == "true" and safety["practice"] == "false"
    assert {r["synthetic"] for r in rows if r["annotator"] == "clinical-2"} == {"true"}
    invalid = [r for r in rows if r["invalidated"] == "true"]
    assert len(invalid) == 5 and invalid[0]["invalidated_reason"] == "wrong item"
    assert {r["rubric_id"] for r in rows if r["track"] == "clinical"} == set(CLINICAL_PANEL)


def test_the_jsonl_export_keeps_event_links_as_lists(annotated):
    study, links = annotated
    lines = [json.loads(line) for line in export_text(study, "jsonl").splitlines()]
    assert len(lines) == 25
    linked = [line for line in lines if line["event_ids"]]
    assert [(line["rubric_id"], line["event_ids"]) for line in linked] == [
        ("clinical_safety", links)
    ]
    assert isinstance(lines[0]["score"], int) and lines[0]["synthetic"] in (True, False)


def test_pseudonymised_exports_give_each_person_one_stable_alias_and_no_username(annotated):
    study, _ = annotated
    text = export_text(study, "csv", pseudonymise=True)
    rows = csv_rows(text)
    assert "clinical-" not in text and "operational-" not in text
    assert {r["annotator"] for r in rows} == {"A01", "A02", "A03", "A04"}
    by_assignment = {}
    for row in rows:
        by_assignment.setdefault(row["assignment"], set()).add(row["annotator"])
    assert all(len(aliases) == 1 for aliases in by_assignment.values())
    # clinical-0 has two assignments (one invalidated): the same alias on both.
    valid = {r["annotator"] for r in rows if r["overall_comment"] == "Careful, mostly."}
    invalid = {r["annotator"] for r in rows if r["invalidated"] == "true"}
    assert valid == invalid and len(valid) == 1


def test_the_export_download_is_an_attachment(researcher_client, annotated):
    study, _ = annotated
    url = reverse("annotation:staff_study_export", args=[study.pk, "jsonl"])
    response = researcher_client.get(url, {"pseudonymise": "1"})
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "pseudonymised-synthetic.jsonl" in response["Content-Disposition"]
    assert researcher_client.get(reverse("annotation:staff_study_export",
                                         args=[study.pk, "xlsx"])).status_code == 404  # fmt: skip


def download(client, study, fmt: str):
    response = client.get(reverse("annotation:staff_study_export", args=[study.pk, fmt]))
    assert response.status_code == 200
    name = response["Content-Disposition"].split('filename="')[1].rstrip('"')
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return name, content


def test_an_export_holding_synthetic_work_says_so_in_its_name_its_top_and_its_rows(
    researcher_client, annotated
):
    study, _ = annotated
    names = {fmt: download(researcher_client, study, fmt) for fmt in ("csv", "jsonl", "parquet")}
    for fmt, (name, _) in names.items():
        assert name == f"study-{study.pk}-annotations-synthetic.{fmt}"
    text = names["csv"][1].decode()
    assert text.startswith("# Includes the work of synthetic clinicians")
    assert {row["synthetic"] for row in csv_rows(text)} == {"true", "false"}
    schema = pq.read_schema(io.BytesIO(names["parquet"][1]))
    assert schema.metadata[b"synthetic"].startswith(b"Includes the work of synthetic")
    jsonl = [json.loads(line) for line in names["jsonl"][1].decode().splitlines()]
    assert {row["synthetic"] for row in jsonl} == {True, False}


def test_an_export_without_synthetic_work_carries_no_mark(researcher_client, study, clinicians):
    annotate(study.items.first(), clinicians[0])
    name, content = download(researcher_client, study, "csv")
    assert name == f"study-{study.pk}-annotations.csv"
    assert content.decode().startswith("study,project,")


# --- import: a good file -------------------------------------------------------------------


def paper_rows(item, annotator="paper-doc", track="clinical", **overrides) -> list[dict]:
    study = item.study
    return [
        {
            "conversation": str(item.conversation.public_id),
            "annotator": annotator,
            "track": track,
            "rubric_id": rubric_id,
            "score": score,
            "feedback": f"note on {rubric_id}",
        }
        | overrides
        for rubric_id, score in full_scores(study, track, 4).items()
    ]


def as_csv(rows: list[dict], columns=None) -> bytes:
    columns = columns or list(rows[0])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_a_good_file_creates_submitted_annotations_with_history_and_inactive_people(
    study, researcher
):
    item = study.items.first()
    rows = paper_rows(item, event_ids=" ".join(events_of(item, 1)))
    result = annotations_import(study, data=as_csv(rows), filename="paper.csv", actor=researcher)
    assert (result.assignments, result.rows, result.created_users) == (1, 5, ["paper-doc"])
    assignment = Assignment.objects.get(item=item, annotator__username="paper-doc")
    assert assignment.is_submitted and assignment.slot == 0 and not assignment.practice
    assert assignment.scores == full_scores(study, "clinical", 4)
    assert assignment.feedback["triage_quality"] == "note on triage_quality"
    assert assignment.event_links["clinical_safety"] == events_of(item, 1)
    person = assignment.annotator
    assert not person.is_active and not person.has_usable_password()
    assert person.role == "annotator" and person.track == "clinical" and person.licensed
    entry = AssignmentHistory.objects.get(assignment=assignment)
    assert entry.kind == HistoryKind.IMPORT and entry.actor == researcher
    assert "paper.csv" in entry.note and entry.new["scores"] == assignment.scores


# --- import: bad files -----------------------------------------------------------------------


def bad_upload(item, kind: str) -> tuple[bytes, str, str]:
    """(file bytes, file name, the problem expected to be named)."""
    rows = paper_rows(item)
    if kind == "unknown conversation":
        rows[2]["conversation"] = "00000000-0000-0000-0000-000000000000"
        return (
            as_csv(rows),
            "f.csv",
            "line 4: conversation 00000000-0000-0000-0000-000000000000 is not an item",
        )
    if kind == "score out of range":
        rows[1]["score"] = 7
        return as_csv(rows), "f.csv", "line 3: score 7 is out of range"
    if kind == "unknown rubric":
        rows[0]["rubric_id"] = "bedside_manner"
        return (
            as_csv(rows),
            "f.csv",
            "line 2: rubric 'bedside_manner' is not a rubric of this study",
        )
    if kind == "missing column":
        return (
            as_csv(rows, ["conversation", "annotator", "track", "rubric_id"]),
            "f.csv",
            ("line 1: missing column(s) score"),
        )
    if kind == "bad JSON line":
        lines = [json.dumps(r) for r in rows]
        lines[3] = lines[3][:-5]
        return "\n".join(lines).encode(), "f.jsonl", "line 4: not valid JSON"
    if kind == "binary file":
        return b"PK\x03\x04\x00\x00binary", "scores.xlsx", "the file is not text"
    if kind == "missing rubric":
        return as_csv(rows[:-1]), "f.csv", "no score for Conversation Realism"
    raise AssertionError(kind)


BAD = ["unknown conversation", "score out of range", "unknown rubric", "missing column",
       "bad JSON line", "binary file", "missing rubric"]  # fmt: skip


@pytest.mark.parametrize("kind", BAD)
def test_each_bad_row_is_named_and_nothing_is_saved(study, researcher, kind):
    item = study.items.first()
    data, name, expected = bad_upload(item, kind)
    users_before = User.objects.count()
    with pytest.raises(ImportRejected) as rejected:
        annotations_import(study, data=data, filename=name, actor=researcher)
    assert any(expected in problem for problem in rejected.value.problems), rejected.value.problems
    assert not Assignment.objects.exists() and User.objects.count() == users_before


def test_every_problem_of_a_file_is_listed_not_only_the_first(study, researcher):
    rows = paper_rows(study.items.first())
    rows[0]["score"], rows[4]["score"] = "high", 0
    with pytest.raises(ImportRejected) as rejected:
        annotations_import(study, data=as_csv(rows), filename="f.csv", actor=researcher)
    problems = rejected.value.problems
    assert any(p.startswith("line 2: score must be a whole number") for p in problems)
    assert any(p.startswith("line 6: score 0 is out of range") for p in problems)


def test_one_bad_row_keeps_the_good_rows_of_the_file_out_too(study, researcher):
    first, second = study.items.all()[:2]
    rows = paper_rows(first) + paper_rows(second, annotator="other-doc", score=9)
    with pytest.raises(ImportRejected):
        annotations_import(study, data=as_csv(rows), filename="f.csv", actor=researcher)
    assert not Assignment.objects.exists() and not User.objects.filter(username="paper-doc")


def test_an_import_never_pushes_an_item_past_its_overlap(study, researcher, clinicians):
    item = study.items.first()
    annotate(item, clinicians[0])
    rows = paper_rows(item) + paper_rows(item, annotator="second-doc")
    with pytest.raises(ImportRejected) as rejected:
        annotations_import(study, data=as_csv(rows), filename="f.csv", actor=researcher)
    assert "2 clinical annotations for 1 free seat(s)" in " ".join(rejected.value.problems)


def test_an_unlicensed_person_cannot_be_imported_into_a_target_study(study, researcher):
    rows = paper_rows(study.items.first(), licensed="false")
    with pytest.raises(ImportRejected) as rejected:
        annotations_import(study, data=as_csv(rows), filename="f.csv", actor=researcher)
    assert "not licensed" in rejected.value.problems[0]


def test_a_locked_study_takes_no_import(study, researcher):
    study.status = StudyStatus.LOCKED
    study.save()
    with pytest.raises(ImportRejected, match="problem"):
        annotations_import(
            study, data=as_csv(paper_rows(study.items.first())), filename="f.csv", actor=researcher
        )


def test_the_import_page_lists_the_problems_and_saves_nothing(researcher_client, study):
    rows = paper_rows(study.items.first())
    rows[1]["score"] = 6
    upload = SimpleUploadedFile("paper.csv", as_csv(rows), content_type="text/csv")
    url = reverse("annotation:staff_study_import", args=[study.pk])
    response = researcher_client.post(url, {"file": upload})
    assert response.status_code == 200
    assert "line 3: score 6 is out of range" in response.content.decode()
    assert not Assignment.objects.exists()


def test_the_import_page_saves_a_good_file_and_returns_to_the_study(researcher_client, study):
    upload = SimpleUploadedFile("paper.csv", as_csv(paper_rows(study.items.first())))
    url = reverse("annotation:staff_study_import", args=[study.pk])
    response = researcher_client.post(url, {"file": upload})
    assert response["Location"] == reverse("annotation:staff_study", args=[study.pk])
    assert Assignment.objects.filter(annotator__username="paper-doc").count() == 1


# --- round trip ----------------------------------------------------------------------------


def annotations_of(study) -> list[tuple]:
    return sorted(
        (
            str(a.item.conversation.public_id), a.annotator.username, a.track, a.practice,
            a.synthetic, a.is_invalidated, a.invalidated_reason,
            *(json.dumps(d, sort_keys=True) for d in (a.scores, a.feedback, a.event_links)),
            a.overall_comment, a.seconds_on_task, a.submitted_at,
        )
        for a in Assignment.objects.filter(item__study=study, status="submitted")
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_then_import_into_another_study_gives_the_same_annotations(
    annotated, scored_job, researcher, fmt
):
    source, _ = annotated
    copy = new_study(scored_job, name="Copy", project="Elsewhere", size=8)
    assert set(copy.items.values_list("conversation", flat=True)) >= set(
        source.items.values_list("conversation", flat=True)
    )
    data = export_text(source, fmt).encode()
    with pytest.raises(ImportRejected) as rejected:  # the rows name real people of this site
        annotations_import(copy, data=data, filename=f"export.{fmt}", actor=researcher)
    named = [account.username for account in rejected.value.unconfirmed]
    assert rejected.value.problems == [] and not Assignment.objects.filter(item__study=copy)
    result = annotations_import(copy, data=data, filename=f"export.{fmt}", actor=researcher,
                                confirmed_accounts=named)  # fmt: skip
    assert result.assignments == 5 and result.created_users == []
    assert result.existing_accounts == named
    assert annotations_of(copy) == annotations_of(source)
