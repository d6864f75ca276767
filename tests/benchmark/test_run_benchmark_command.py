"""The run command's summary counts every conversation, unfinished ones included, and never
reports a run as done while work is left."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from benchmark.models import Run
from jobs.services.processes import ProcessIdentity, holder_fields
from tests.support.builders import enriched_set, launched_run

pytestmark = pytest.mark.django_db


def test_the_summary_counts_running_queued_and_pending_conversations(monkeypatch):
    run = launched_run(enriched_set(name="summary set", size=3), name="summary run")
    first, second, _ = run.conversations.all()
    elsewhere = holder_fields(ProcessIdentity("another-host", 7, timezone.now()))
    run.conversations.filter(pk=first.pk).update(
        status="running", heartbeat_at=timezone.now(), **elsewhere
    )
    run.conversations.filter(pk=second.pk).update(status="queued", heartbeat_at=timezone.now())
    # The workers are not what is tested: the message to them is not sent.
    monkeypatch.setattr(
        "benchmark.management.commands.run_benchmark.job_start", lambda *a, **k: None
    )
    out = StringIO()

    call_command(
        "run_benchmark", "--name", "summary run", "--set", "summary set",
        "--model", "offline/careful", "--no-wait", stdout=out,
    )  # fmt: skip

    summary = out.getvalue()
    assert "0 finished, 0 failed, 0 cancelled, 1 running, 1 queued, 1 pending" in summary
    assert "Not finished: the workers play the rest." in summary


def test_the_command_takes_generation_settings_on_its_models(monkeypatch):
    enriched_set(name="settings set", size=1)
    monkeypatch.setattr(
        "benchmark.management.commands.run_benchmark.job_start", lambda *a, **k: None
    )
    models = ("openai/gpt-5.5@effort=high", "openai/gpt-5.5@effort=low")

    call_command(
        "run_benchmark", "--name", "settings run", "--set", "settings set",
        "--model", models[0], "--model", models[1], "--no-wait", stdout=StringIO(),
    )  # fmt: skip

    run = Run.objects.get(name="settings run")
    assert [agent.model for agent in run.agents.order_by("pk")] == list(models)
    with pytest.raises(CommandError, match="refuses a custom temperature"):
        call_command(
            "run_benchmark", "--name", "refused run", "--set", "settings set",
            "--model", "openai/gpt-5.5@temperature=0", "--no-wait", stdout=StringIO(),
        )  # fmt: skip
