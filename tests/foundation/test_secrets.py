"""Provider keys never leave the settings: with sentinel values in every key setting and a run
that really sends them (OpenAI-compatible agent, an Anthropic-format judge, both against the
local fake server), no page an admin can open, no export, no log line, no error page and no
stored prompt or answer contains them."""

import logging

import pytest
from django.apps import apps
from django.db import models
from django.urls import reverse

from benchmark.services.inline import run_execute_inline
from jury.models import Jury
from jury.services import scoring
from jury.services.rubrics import current_weights
from llm.clients import model_router
from tests.fakes.llm_server import running_fake_llm_server
from tests.foundation.access_table import PAGES, build_objects
from tests.support.builders import enriched_set, launched_run

SENTINELS = {
    "OPENAI_API_KEY": "sk-sentinel-openai-4c1f9e",
    "ANTHROPIC_API_KEY": "sentinel-anthropic-8b27d0",
    "OPENAI_COMPATIBLE_API_KEY": "sentinel-compatible-31aa7c",
}


@pytest.fixture
def keyed_world(settings, caplog, transactional_db):
    caplog.set_level(logging.DEBUG)
    with running_fake_llm_server(default_text="Thank you, I will call the clinic.") as server:
        for name, value in SENTINELS.items():
            setattr(settings, name, value)
        settings.OPENAI_COMPATIBLE_BASE_URL = server.compatible_base_url
        settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
        settings.LLM_MAX_RETRIES = 1
        model_router.cache_clear()
        run = launched_run(
            enriched_set(name="keys", size=1), models=("openai-compatible/agent-x",),
            roster_model="offline/patient", use_cache=False, max_turns=2,
        )  # fmt: skip
        run_execute_inline(run, threads=1)
        jury = Jury.objects.create(
            name="keyed jury", judges=["anthropic/judge-x"],
            weights=current_weights(),
        )  # fmt: skip
        job = scoring.scoring_launch(run=run, jury=jury, use_cache=False)
        for score_id in scoring.pending_score_ids(job):
            scoring.judge_score_execute(score_id)
        sent = " ".join(value for r in server.requests for value in r.headers.values())
        yield {"run": run, "job": job, "sent": sent, "caplog": caplog}
    model_router.cache_clear()


def test_no_page_export_log_or_stored_text_holds_a_key(
    client, keyed_world, admin_user, users_by_role
):
    sent = keyed_world["sent"]
    assert SENTINELS["OPENAI_COMPATIBLE_API_KEY"] in sent  # the keys were really used
    assert SENTINELS["ANTHROPIC_API_KEY"] in sent
    client.force_login(admin_user)
    objects = build_objects(users_by_role) | {
        "run": keyed_world["run"], "conversation": keyed_world["run"].conversations.first(),
        "scoring_job": keyed_world["job"],
    }  # fmt: skip
    bodies = {}
    for page in PAGES:
        url = reverse(page.name, kwargs=page.kwargs(objects))
        response = client.get(url)
        bodies[url] = (
            b"".join(response.streaming_content) if response.streaming else response.content
        )
    bodies["/no/such/page/"] = client.get("/no/such/page/").content
    leaks = [
        url for url, body in bodies.items() for key in SENTINELS.values() if key.encode() in body
    ]
    assert leaks == []
    assert not [key for key in SENTINELS.values() if key in keyed_world["caplog"].text]
    assert stored_texts_holding(SENTINELS.values()) == []
    # The scan finds what is stored: the fake model's reply is in the trace.
    assert "benchmark.TraceEvent.content" in stored_texts_holding(["I will call the clinic"])


def stored_texts_holding(secrets) -> list[str]:
    """Every text and JSON column of every model, searched in the database."""
    found = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, (models.TextField, models.CharField, models.JSONField)):
                for secret in secrets:
                    lookup = {f"{field.name}__icontains": secret}
                    if isinstance(field, models.JSONField):
                        continue  # searched through the text cast below
                    if model.objects.filter(**lookup).exists():
                        found.append(f"{model._meta.label}.{field.name}")
        json_fields = [f.name for f in model._meta.get_fields() if isinstance(f, models.JSONField)]
        for row in model.objects.values(*json_fields) if json_fields else []:
            if any(secret in str(row) for secret in secrets):
                found.append(model._meta.label)
                break
    return found
