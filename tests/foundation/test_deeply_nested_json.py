"""JSON nested far too deep (`'{"a":' * 50000`) is refused with a message naming where, on
every path JSON from a person enters: the conversation import page and API, the rubric lab's
import, the knowledge and expert-criteria uploads, the study import, the study archive (on its
upload page and in its job) and any API body. None of them reaches the parser's recursion."""

import hashlib
import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from alignment.models import ArchiveJob, ArchiveJobStatus
from alignment.services.archive.jobs import archive_job_run
from annotation.models import Study
from benchmark.models import Run
from common import json_text, safe_yaml
from rubric_lab.services.coverage import UploadError, expert_rows
from tests.alignment.archive_support import archive_bytes, build_world, members, rezip
from tests.annotation.conftest import new_study
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

DEEP = '{"a":' * 50000
REFUSAL = "objects and arrays nested more than 64 levels deep"


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode())


def page_text(response) -> str:
    return html.unescape(response.content.decode())


# --- the reader itself -------------------------------------------------------------------------


def test_the_reader_refuses_past_its_limit_and_names_the_place():
    text = '\n  {"ok": "[[[[ brackets in a string do not count"}\n' + "[" * 65 + "]" * 65
    with pytest.raises(json.JSONDecodeError) as refused:
        json_text.loads(text)
    assert (refused.value.msg, refused.value.lineno, refused.value.colno) == (REFUSAL, 3, 65)
    nested = "[" * 64 + "]" * 64
    assert json_text.loads(nested) == json.loads(nested)


def test_yaml_nested_too_deep_is_refused_before_loading():
    with pytest.raises(safe_yaml.YamlTooComplex, match="nests lists and mappings more than 64"):
        safe_yaml.safe_load("[" * 50000)


# --- every upload --------------------------------------------------------------------------------


def test_the_conversation_import_page_names_the_line(researcher_client):
    good = json.dumps({"id": "c1", "messages": [{"role": "user", "content": "Hi"}]})
    response = researcher_client.post(
        reverse("benchmark:run_import"), {"file": upload("deep.jsonl", f"{good}\n{DEEP}\n")}
    )
    assert response.status_code == 400
    assert f"line 2: not JSON ({REFUSAL}, column 321)" in page_text(response)
    assert not Run.objects.exists()


def test_the_import_api_answers_in_its_json_shape(researcher_client):
    response = researcher_client.post("/api/v1/imports", {"file": upload("deep.jsonl", DEEP)})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    problems = [error["message"] for error in response.json()["errors"]]
    assert problems == [f"line 1: not JSON ({REFUSAL}, column 321)"]


def test_a_tool_call_whose_arguments_nest_too_deep_is_named(researcher_client):
    call = {"id": "t1", "function": {"name": "lookup", "arguments": DEEP}}
    line = {"id": "c1", "messages": [{"role": "assistant", "content": "", "tool_calls": [call]}]}
    response = researcher_client.post(
        "/api/v1/imports", {"file": upload("deep.jsonl", json.dumps(line))}
    )
    assert response.status_code == 400
    assert f"arguments are not JSON ({REFUSAL})" in response.json()["errors"][0]["message"]


def test_any_api_body_nested_too_deep_is_a_json_400(admin_client_):
    response = admin_client_.post("/api/v1/runs", DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    assert REFUSAL in response.json()["detail"]


def test_the_lab_import_page_names_the_line(researcher_client):
    response = researcher_client.post(
        reverse("rubric_lab:import"), {"file": upload("hb.jsonl", DEEP)}
    )
    assert response.status_code == 400
    assert f"line 1: not valid JSON ({REFUSAL}, column 321)" in page_text(response)


@pytest.mark.parametrize("name, text", [("deep.json", DEEP), ("deep.yaml", "[" * 50000)])
def test_the_knowledge_upload_refuses_it(researcher_client, name, text):
    response = researcher_client.post(reverse("rubric_lab:kb_upload"), {"file": upload(name, text)})
    assert response.status_code == 400
    assert f"{name}: cannot be read" in page_text(response)
    assert "64 levels deep" in page_text(response)


def test_the_expert_criteria_upload_refuses_it():
    with pytest.raises(UploadError, match=f"not valid JSON \\({REFUSAL}, line 1\\)"):
        expert_rows("criteria.json", DEEP)


def test_the_study_import_page_names_the_line(researcher_client, scored_job):  # noqa: F811 - fixture
    study = new_study(scored_job)
    response = researcher_client.post(
        reverse("annotation:staff_study_import", args=[study.pk]),
        {"file": upload("marks.jsonl", DEEP)},
    )
    assert response.status_code in (200, 400)
    assert f"not valid JSON ({REFUSAL}, column 321)" in page_text(response)


# --- the study archive -------------------------------------------------------------------------


@pytest.fixture
def archive_folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path / "archives"


def resealed(contents: dict[str, bytes]) -> bytes:
    """The archive with its manifest's sizes and digests made to match the members again."""
    manifest = json.loads(contents["manifest.json"])
    for name, entry in manifest["members"].items():
        entry["bytes"] = len(contents[name])
        entry["sha256"] = hashlib.sha256(contents[name]).hexdigest()
    return rezip({**contents, "manifest.json": json.dumps(manifest).encode()})


def test_an_archive_whose_manifest_nests_too_deep_is_refused_on_its_page(
    researcher_client, archive_folder
):
    data = rezip({"manifest.json": DEEP.encode()})
    response = researcher_client.post(
        reverse("alignment:archive_import"), {"file": SimpleUploadedFile("a.zip", data)}
    )
    assert response.status_code == 200
    assert f"manifest.json is not valid JSON ({REFUSAL}" in page_text(response)
    assert not ArchiveJob.objects.exists()


def test_an_archive_row_nested_too_deep_fails_its_job_naming_member_and_line(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixture
    archive_folder,
):
    contents = members(archive_bytes(build_world(scored_job)[0]))
    first, *rest = contents["data/events.jsonl"].split(b"\n")
    contents["data/events.jsonl"] = b"\n".join([first, DEEP.encode(), *rest])
    researcher_client.post(
        reverse("alignment:archive_import"),
        {"file": SimpleUploadedFile("deep.zip", resealed(contents))},
    )
    studies = Study.objects.count()
    archive_job_run(ArchiveJob.objects.get().pk)
    job = ArchiveJob.objects.get()
    assert job.status == ArchiveJobStatus.FAILED
    assert job.error == f"data/events.jsonl line 2: not a JSON object ({REFUSAL}, column 321)"
    assert Study.objects.count() == studies
