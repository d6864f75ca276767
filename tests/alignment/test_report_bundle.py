"""The shareable report bundle (alignment.services.bundle): what the folder holds, what it
never holds, and that its manifest proves it whole. Built from the jury's module-scoped scored
run with a study whose clinicians have names, e-mails and written feedback."""

import io
import json
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import Role, Track
from alignment.engine import bundle as fmt
from alignment.models import ArchiveJob
from alignment.services.archive.jobs import archive_job_run
from alignment.services.bundle import BundleError, bundle_jobs, report_bundle_write
from audit.models import AuditEvent
from tests.alignment.conftest import annotate_study
from tests.annotation.conftest import annotators, new_study
from tests.conftest import make_user

FEEDBACK_MARK = "Booked without confirming the time"
COMMENT_MARK = "Zebra-comment-7781"


@pytest.fixture
def named_study(scored_job):
    people = {Track.CLINICAL: annotators(Track.CLINICAL, 2, prefix="drwho")}
    for number, person in enumerate(people[Track.CLINICAL]):
        person.first_name, person.last_name = "Gwendolyn", f"Quist{number}"
        person.email = f"gwen{number}@clinic.example"
        person.save()
    study = new_study(scored_job, size=4)
    for assignment in annotate_study(study, scored_job, people):
        assignment.overall_comment = COMMENT_MARK
        assignment.save(update_fields=["overall_comment"])
    return study, people[Track.CLINICAL]


def folder_text(folder) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()
    )


def embedded(folder) -> dict:
    html = (folder / "index.html").read_text(encoding="utf-8")
    found = re.search(
        r'<script id="bundle-data" type="application/json">(.*?)</script>', html, re.S
    )
    return json.loads(found.group(1))


def test_it_holds_the_report_every_conversation_and_a_manifest_that_verifies(scored_job, tmp_path):
    out = tmp_path / "bundle"
    seen = []
    result = report_bundle_write([scored_job], out, progress=lambda done, total: seen.append(done))
    assert seen == sorted(seen) and seen[-1] == 2 * scored_job.conversation_results.count()
    data = embedded(out)
    assert (
        len(data["conversations"])
        == scored_job.conversation_results.count()
        == result.conversations
    )
    first = data["conversations"][0]
    assert first["events"] and first["judgements"] and first["judgements"][0]["rationale"]
    html = (out / "index.html").read_text()
    assert (
        "pass^k" in html
        and "Aggregate [95% CI]" in html
        and "http" not in html.replace("http-equiv", "")
    )
    figures = {p.name for p in (out / f"job-{scored_job.pk}" / "figures").iterdir()}
    assert {"pass-k.svg", "pass-rates.svg", "subgroups-severity.svg"} <= figures
    assert (out / f"job-{scored_job.pk}" / f"run-{scored_job.run_id}-manifest.json").is_file()
    assert (out / "assets" / "app.css").is_file() and (
        out / "assets" / "report_bundle.js"
    ).is_file()
    assert fmt.bundle_verify(out) == []
    assert set(result.manifest["files"]) == {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }


def test_the_manifest_names_a_changed_a_missing_and_an_extra_file(scored_job, tmp_path):
    out = tmp_path / "bundle"
    report_bundle_write([scored_job], out)
    (out / "index.html").write_text("tampered", encoding="utf-8")
    (out / "assets" / "app.css").unlink()
    (out / "extra.txt").write_text("x", encoding="utf-8")
    assert fmt.bundle_verify(out) == [
        "assets/app.css is listed but missing",
        "extra.txt is not listed",
        "index.html does not match its sha256",
    ]


def test_it_never_carries_clinician_identities_and_their_text_only_when_asked(
    named_study, scored_job, tmp_path
):
    study, people = named_study
    report_bundle_write([scored_job], tmp_path / "plain")
    report_bundle_write([scored_job], tmp_path / "text", include_clinician_text=True)
    for folder in ("plain", "text"):
        text = folder_text(tmp_path / folder)
        for person in people:
            for identity in (person.username, person.last_name, person.email, "Gwendolyn"):
                assert identity not in text, (folder, identity)
    plain, with_text = embedded(tmp_path / "plain"), embedded(tmp_path / "text")
    scored = [c for c in plain["conversations"] if c["clinicians"]]
    assert len(scored) == 4 and {n["clinician"] for c in scored for n in c["clinicians"]} == {
        "C1",
        "C2",
    }
    assert FEEDBACK_MARK not in folder_text(tmp_path / "plain") and COMMENT_MARK not in folder_text(
        tmp_path / "plain"
    )
    assert not any("feedback" in n or "comment" in n for c in scored for n in c["clinicians"])
    texts = folder_text(tmp_path / "text")
    assert FEEDBACK_MARK in texts and COMMENT_MARK in texts and with_text["clinician_text"] is True


def test_the_command_writes_the_folder_and_refuses_a_used_one(scored_job, tmp_path, capsys):
    out = tmp_path / "cli"
    call_command("report_bundle", f"run:{scored_job.run_id}", "--out", str(out))
    assert "Wrote" in capsys.readouterr().out and fmt.bundle_verify(out) == []
    with pytest.raises(CommandError, match="not an empty folder"):
        call_command("report_bundle", str(scored_job.pk), "--out", str(out))
    with pytest.raises(CommandError, match="no scoring job 999999"):
        call_command("report_bundle", "999999", "--out", str(tmp_path / "other"))


def test_a_target_that_is_neither_job_nor_run_is_refused(db):
    with pytest.raises(BundleError, match="give a scoring job id"):
        bundle_jobs(["study:4"])


def test_the_button_runs_a_job_whose_zip_verifies(client, scored_job, tmp_path, settings):
    settings.DATA_DIR = tmp_path / "data"
    client.force_login(make_user("rita", Role.RESEARCHER))
    report = client.get(reverse("jury:report", args=[scored_job.pk])).content.decode()
    assert reverse("alignment:report_bundle") in report
    response = client.post(reverse("alignment:report_bundle"), {"job": scored_job.pk})
    job = ArchiveJob.objects.get()
    assert response["Location"] == reverse("alignment:archive_job", args=[job.pk])
    page = client.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 2s"' in page and "without their written feedback" in page

    archive_job_run(job.pk)  # the worker's task

    page = client.get(response["Location"]).content.decode()
    assert "archive-download" in page and "every 2s" not in page
    download = client.get(reverse("alignment:archive_download", args=[job.pk]))
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        archive.extractall(tmp_path / "unzipped")
    folder = tmp_path / "unzipped" / f"report-job{scored_job.pk}"
    assert fmt.bundle_verify(folder) == [] and embedded(folder)["clinician_text"] is False
    assert AuditEvent.objects.filter(action="download.report_bundle").count() == 1
