"""The annotation import checks a file in one pass (every problem of every row at once), and
never puts work under a real person's name without the researcher confirming those names."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from accounts.models import AccountOrigin
from annotation.models import Assignment, AssignmentHistory
from annotation.services.exchange import ImportRejected, annotations_import
from audit.models import AuditEvent
from tests.annotation.test_exchange import as_csv, paper_rows

pytestmark = pytest.mark.django_db
User = get_user_model()
NOWHERE = "00000000-0000-0000-0000-000000000000"


def rejected(study, researcher, data: bytes, name: str = "f.csv", **options) -> ImportRejected:
    users = User.objects.count()
    with pytest.raises(ImportRejected) as error:
        annotations_import(study, data=data, filename=name, actor=researcher, **options)
    assert not Assignment.objects.exists() and User.objects.count() == users
    return error.value


# --- one pass ----------------------------------------------------------------------------------


def test_a_bad_score_does_not_hide_that_rows_name_no_item_of_the_study(study, researcher):
    rows = paper_rows(study.items.first())
    rows[1] |= {"score": 7, "conversation": NOWHERE}  # line 3: two problems in one row
    rows[3]["conversation"] = NOWHERE  # line 5: a problem of the study only
    problems = rejected(study, researcher, as_csv(rows)).problems
    found = [problems.index(p) for p in (
        "line 3: score 7 is out of range: a score is a whole number from 1 to 5",
        f"line 3: conversation {NOWHERE} is not an item of this study",
        f"line 5: conversation {NOWHERE} is not an item of this study",
    )]  # fmt: skip
    assert found == sorted(found)
    # ...and the annotation those two rows left lacks their rubrics:
    assert problems[0].startswith("lines 2, 4, 6 (paper-doc, conversation")
    assert problems[0].endswith("no score for Triage Quality, Patient Profile Realism")


def test_every_problem_of_every_row_is_listed_in_line_order(study, researcher, clinicians):
    first, second = study.items.all()[:2]
    rows = paper_rows(first) + paper_rows(second, annotator="other-doc")
    rows[0]["score"] = "high"  # line 2
    rows[2]["rubric_id"] = "bedside_manner"  # line 4: and its annotation lacks that rubric
    rows[6] |= {"track": "surgical", "seconds_on_task": "-3"}  # line 8
    rows[9]["event_ids"] = "e9999"  # line 11
    columns = [*rows[0], "seconds_on_task", "event_ids"]
    problems = rejected(study, researcher, as_csv(rows, columns)).problems
    lines = [int(p.split()[1].split("-")[0].rstrip(",:")) for p in problems]
    assert lines == sorted(lines)
    text = "\n".join(problems)
    assert "line 2: score must be a whole number, not 'high'" in text
    assert "line 4: rubric 'bedside_manner' is not a rubric of this study" in text
    assert "line 8: seconds_on_task must not be negative" in text
    assert "line 8: track 'surgical' is not one of clinical, operational" in text
    assert "line 11: unknown trace event(s) e9999" in text
    assert "no score for Triage Quality" in text  # the group that lost its line 4


def test_a_row_with_an_unreadable_score_still_counts_for_its_annotation(study, researcher):
    """The row names its rubric: its annotation is not also reported as lacking it."""
    rows = paper_rows(study.items.first())
    rows[2]["score"] = 9
    assert rejected(study, researcher, as_csv(rows)).problems == [
        "line 4: score 9 is out of range: a score is a whole number from 1 to 5"
    ]


def test_a_jsonl_line_missing_a_column_is_checked_for_the_rest_too(study, researcher):
    rows = paper_rows(study.items.first())
    del rows[0]["score"]
    rows[0]["conversation"] = NOWHERE
    data = "\n".join(json.dumps(r) for r in rows).encode()
    problems = rejected(study, researcher, data, "f.jsonl").problems
    assert problems[:2] == [
        "line 1: missing score",
        f"line 1: conversation {NOWHERE} is not an item of this study",
    ]


# --- real people's accounts --------------------------------------------------------------------


def test_rows_naming_a_real_persons_account_wait_for_a_confirmation(study, researcher, clinicians):
    person = clinicians[0]
    person.first_name, person.last_name = "Cleo", "Clinician"
    person.save()
    first, second = study.items.all()[:2]
    data = as_csv(paper_rows(first, annotator=person.username) + paper_rows(second))
    refusal = rejected(study, researcher, data)
    assert refusal.problems == []
    assert [(a.username, a.full_name, a.lines) for a in refusal.unconfirmed] == [
        (person.username, "Cleo Clinician", "lines 2-6")
    ]
    result = annotations_import(study, data=data, filename="paper.csv", actor=researcher,
                                confirmed_accounts={person.username})  # fmt: skip
    assert result.existing_accounts == [person.username] and result.created_users == ["paper-doc"]
    theirs = Assignment.objects.get(item=first, annotator=person)
    note = AssignmentHistory.objects.get(assignment=theirs).note
    assert f"the work of {person.username}, confirmed on import" in note
    event = AuditEvent.objects.get(action="annotations.imported")
    assert event.actor == researcher and event.object_id == str(study.pk)
    assert event.after["existing_accounts"] == [person.username]
    assert event.after["created_accounts"] == ["paper-doc"] and event.after["file"] == "paper.csv"


def test_a_confirmation_covers_only_the_accounts_it_names(study, researcher, clinicians):
    first, second = study.items.all()[:2]
    rows = paper_rows(first, annotator=clinicians[0].username)
    rows += paper_rows(second, annotator=clinicians[1].username)
    refusal = rejected(study, researcher, as_csv(rows),
                       confirmed_accounts={clinicians[0].username})  # fmt: skip
    assert [a.username for a in refusal.unconfirmed] == [clinicians[1].username]


def test_a_deactivated_real_account_needs_the_confirmation_too(study, researcher, clinicians):
    clinicians[0].is_active = False
    clinicians[0].save()
    data = as_csv(paper_rows(study.items.first(), annotator=clinicians[0].username))
    assert [a.username for a in rejected(study, researcher, data).unconfirmed] == [
        clinicians[0].username
    ]


def test_accounts_an_import_created_take_more_work_without_confirmation(study, researcher):
    first, second = study.items.all()[:2]
    annotations_import(study, data=as_csv(paper_rows(first)), filename="a.csv", actor=researcher)
    created = User.objects.get(username="paper-doc")
    assert created.origin == AccountOrigin.ANNOTATION_FILE and created.is_imported
    result = annotations_import(study, data=as_csv(paper_rows(second)), filename="b.csv",
                                actor=researcher)  # fmt: skip
    assert result.assignments == 1 and result.existing_accounts == []


def test_the_import_page_asks_to_confirm_the_accounts_it_lists(researcher_client, study,
                                                               clinicians):  # fmt: skip
    url = reverse("annotation:staff_study_import", args=[study.pk])
    data = as_csv(paper_rows(study.items.first(), annotator=clinicians[0].username))
    page = researcher_client.post(url, {"file": SimpleUploadedFile("paper.csv", data)})
    body = page.content.decode()
    assert page.status_code == 200 and 'id="import-accounts"' in body
    assert f"<strong>{clinicians[0].username}</strong>: lines 2-6" in body
    assert f'name="accounts" value="{clinicians[0].username}"' in body
    assert 'name="confirm"' in body and not Assignment.objects.exists()

    unticked = {"file": SimpleUploadedFile("paper.csv", data), "accounts": clinicians[0].username}
    assert researcher_client.post(url, unticked).status_code == 200
    assert not Assignment.objects.exists()

    ticked = unticked | {"file": SimpleUploadedFile("paper.csv", data), "confirm": "on"}
    response = researcher_client.post(url, ticked)
    assert response["Location"] == reverse("annotation:staff_study", args=[study.pk])
    assert Assignment.objects.get().annotator == clinicians[0]
