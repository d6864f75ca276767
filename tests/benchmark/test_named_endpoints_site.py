"""Named endpoints on the site: admins edit the list in the browser (checked, audited, in force
at once), runs compare models of two endpoints in one run against the local fake servers, and
a missing key variable fails the conversations with an error naming the endpoint."""

import html

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from benchmark.models import ConversationStatus
from llm.models import ModelEndpointList
from llm.services.endpoints import endpoint_list_save, endpoints_forget
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_list():
    endpoints_forget()
    yield
    endpoints_forget()


def two_endpoints(first, second) -> str:
    return (
        "endpoints:\n"
        f"  - {{name: vllm-a, base_url: '{first}', api_key_env: VLLM_A_API_KEY}}\n"
        f"  - {{name: ollama, base_url: '{second}', concurrency: 2}}\n"
    )


def test_an_admin_saves_the_list_and_its_models_are_accepted_at_once(admin_client_):
    text = two_endpoints("http://gpu-1:8000/v1", "http://127.0.0.1:11434/v1")
    response = admin_client_.post(
        reverse("benchmark:endpoints"), {"yaml_text": text, "note": "GPU box"}
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="endpoints.changed")
    assert event.after == {"yaml": text.strip()} and "ollama" in event.before["yaml"]
    page = admin_client_.get(reverse("benchmark:endpoints")).content.decode()
    assert "vllm-a/…" in page and "VLLM_A_API_KEY" in page and "not set" in page
    benchmark_set = enriched_set(size=1)
    launch = admin_client_.post(
        "/api/v1/runs",
        {"name": "Two servers", "benchmark_set": benchmark_set.pk,
         "models": ["vllm-a/llama-3.3-70b", "ollama/qwen3"]},
        content_type="application/json",
    )  # fmt: skip
    assert launch.status_code == 201, launch.content


def test_a_bad_list_lists_every_problem_and_saves_nothing(admin_client_):
    text = (
        "endpoints:\n  - {name: openai, base_url: ftp://x}\n"
        "  - {name: b, base_url: http://y, concurrency: -1}"
    )
    response = admin_client_.post(reverse("benchmark:endpoints"), {"yaml_text": text})
    page = response.content.decode()
    assert response.status_code == 200
    assert "built-in provider" in page and "base_url" in page and "concurrency" in page
    assert not ModelEndpointList.objects.exists()


def test_an_unknown_endpoint_is_refused_like_an_unknown_provider(admin_client_):
    benchmark_set = enriched_set(size=1)
    response = admin_client_.post(
        "/api/v1/runs", {"name": "R", "benchmark_set": benchmark_set.pk, "models": ["vllm-z/m"]},
        content_type="application/json",
    )  # fmt: skip
    assert response.status_code == 400 and "vllm-z" in response.json()["detail"]


def test_one_run_compares_models_on_two_endpoints(monkeypatch):
    monkeypatch.setenv("VLLM_A_API_KEY", "key-a")
    with running_fake_llm_server() as first, running_fake_llm_server() as second:
        endpoint_list_save(yaml_text=two_endpoints(first.openai_base_url, second.openai_base_url))
        run = launched_run(enriched_set(size=1), models=("vllm-a/llama-3.3-70b", "ollama/qwen3"),
                           max_turns=1)  # fmt: skip
        played(run)
        assert {r.body["model"] for r in first.requests} == {"llama-3.3-70b"}
        assert {r.body["model"] for r in second.requests} == {"qwen3"}
        assert first.requests[0].headers["authorization"] == "Bearer key-a"
    statuses = set(run.conversations.values_list("status", flat=True))
    assert statuses == {ConversationStatus.FINISHED}


def test_a_missing_key_variable_fails_the_conversation_naming_the_endpoint(monkeypatch):
    monkeypatch.delenv("VLLM_A_API_KEY", raising=False)
    endpoint_list_save(yaml_text=two_endpoints("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"))
    run = played(launched_run(enriched_set(size=1), models=("vllm-a/llama-3.3-70b",), max_turns=1))
    conversation = run.conversations.get()
    assert conversation.status == ConversationStatus.FAILED
    assert "vllm-a" in conversation.error and "VLLM_A_API_KEY" in conversation.error


def test_the_site_knows_its_own_variables_from_what_its_settings_read(settings):
    own = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "EMAIL_HOST_PASSWORD", "OPENAI_API_KEY"}
    assert own <= settings.SITE_VARIABLES


@pytest.mark.parametrize(
    "variable, reason",
    [
        ("SECRET_KEY", "is one of the site's own settings"),
        ("EMAIL_HOST_PASSWORD", "is one of the site's own settings"),
        ("ANTHROPIC_API_KEY", "is one of the site's own settings"),
        ("HOME", "does not end in _API_KEY"),
    ],
)
def test_an_admin_cannot_name_a_variable_that_is_no_model_key(admin_client_, variable, reason):
    text = (
        f"endpoints:\n  - {{name: thief, base_url: 'http://evil.example', api_key_env: {variable}}}"
    )
    response = admin_client_.post(reverse("benchmark:endpoints"), {"yaml_text": text})
    assert response.status_code == 200
    assert f"thief: api_key_env {variable} {reason}" in html.unescape(response.content.decode())
    assert not ModelEndpointList.objects.exists()


def test_a_list_stored_naming_the_signing_key_never_sends_it(monkeypatch, settings):
    """A list saved before the rule: its conversations fail naming the variable, and the fake
    server never hears from the site."""
    with running_fake_llm_server() as server:
        ModelEndpointList.objects.create(
            yaml_text=f"endpoints:\n  - {{name: thief, base_url: '{server.openai_base_url}', "
            "api_key_env: SECRET_KEY}"
        )
        run = played(launched_run(enriched_set(size=1), models=("thief/m",), max_turns=1))
        assert server.requests == []
    conversation = run.conversations.get()
    assert conversation.status == ConversationStatus.FAILED
    assert "api_key_env SECRET_KEY is one of the site's own settings" in conversation.error
    assert settings.SECRET_KEY not in conversation.error
