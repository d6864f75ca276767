"""Every model call's row keeps the seed sent and the backend's fingerprint; the conversation
page shows them, and the run page downloads the manifest (audited)."""

import json
from functools import partial

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from benchmark.models import ModelCall
from jobs.services.accounting import RecordingClient, seeds_by_purpose
from llm.engine.chat import ChatRequest, ChatResponse

pytestmark = pytest.mark.django_db


class Answers:
    """A client answering every call with the seed and fingerprint it is given."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def chat(self, request):
        seed, fingerprint = self.answers.pop(0)
        return ChatResponse(text="ok", model=request.model, seed=seed, fingerprint=fingerprint)


def ask(recorder, purpose):
    return recorder.chat(ChatRequest("openai/gpt-4.1", purpose, "", (), sample="s"))


def test_each_call_row_keeps_its_seed_and_fingerprint(run):
    conversation = run.conversations.first()
    owner = partial(ModelCall, run=run, conversation=conversation)
    recorder = RecordingClient(Answers((11, "fp_a"), (11, "fp_b"), (None, "")), owner=owner)

    ask(recorder, "assistant")
    ask(recorder, "assistant")
    ask(recorder, "patient")

    rows = conversation.model_calls.order_by("pk").values_list("seed", "fingerprint")
    assert list(rows) == [(11, "fp_a"), (11, "fp_b"), (None, "")]
    assert seeds_by_purpose(conversation.model_calls.all()) == [
        {
            "purpose": "assistant",
            "model": "openai/gpt-4.1",
            "seeds": [11],
            "fingerprints": ["fp_a", "fp_b"],
        }
    ]


def test_the_conversation_page_shows_the_seeds_and_backends(researcher_client, run):
    conversation = run.conversations.first()
    ModelCall.objects.create(
        run=run, conversation=conversation, purpose="assistant", model="openai/gpt-4.1",
        seed=424242, fingerprint="fp_c3",
    )  # fmt: skip

    page = researcher_client.get(reverse("benchmark:conversation", args=[conversation.public_id]))

    html = page.content.decode()
    assert "Provider seeds" in html
    assert "assistant: seed 424242" in html and "fp_c3" in html


def test_a_conversation_without_seeds_shows_no_seed_line(researcher_client, run):
    conversation = run.conversations.first()

    page = researcher_client.get(reverse("benchmark:conversation", args=[conversation.public_id]))

    assert "Provider seeds" not in page.content.decode()


def test_the_run_page_downloads_its_manifest(researcher_client, run):
    page = researcher_client.get(reverse("benchmark:run", args=[run.pk]))
    link = reverse("benchmark:run_manifest", args=[run.pk])
    assert link in page.content.decode()

    download = researcher_client.get(link)

    assert download["Content-Disposition"].endswith(f'"run-{run.pk}-manifest.json"')
    manifest = json.loads(download.content)
    assert manifest["run"]["config_hash"] == run.config_hash
    assert manifest["data_files"] == run.inputs["data_files"]
    assert AuditEvent.objects.filter(action="download.manifest").count() == 1


def test_the_api_serves_the_same_manifest(researcher_client, run):
    page = researcher_client.get(reverse("benchmark:run_manifest", args=[run.pk]))

    api = researcher_client.get(f"/api/v1/runs/{run.pk}/manifest.json")

    assert api.status_code == 200
    assert api.content == page.content
