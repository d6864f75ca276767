"""Pages for runs: launch, progress, controls, export, and one conversation's trace."""

import json
from decimal import Decimal

import pytest
from django.urls import reverse

from benchmark.models import ConversationStatus, JobStatus, Run, Termination, TraceEvent
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute
from tests.benchmark.conftest import SET_SIZE

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def played_run(run):
    for conversation in run.conversations.all():
        conversation_execute(conversation.pk)
    runs.run_dispatch(run, lambda ids: None)
    run.refresh_from_db()
    return run


def launch_form(benchmark_set, config, **overrides) -> dict:
    return {
        "name": "From the form",
        "benchmark_set": benchmark_set.pk,
        "models": "offline/careful\noffline/careless",
        "agent_configs": [config.pk],
        "patient_model": "offline/patient",
        "repetitions": 1,
        "concurrency": 4,
        "max_turns": 15,
        "seed": 0,
        "use_cache": "on",
        **overrides,
    }


def control(client, run, action, **data):
    return client.post(reverse("benchmark:run_control", args=[run.pk, action]), data)


def test_the_run_list_shows_each_run_and_its_agents(researcher_client, run):
    response = researcher_client.get(reverse("benchmark:runs"))
    page = response.content.decode()
    assert response.status_code == 200
    assert run.name in page and "offline/careless · baseline" in page
    assert reverse("benchmark:run_new") not in page  # launching is for admins


def test_admins_see_the_launch_form(admin_client_, ready_set, baseline):
    response = admin_client_.get(reverse("benchmark:run_new"))
    assert response.status_code == 200
    assert ready_set.name in response.content.decode()


def test_researchers_cannot_launch_runs(researcher_client, ready_set, baseline):
    assert researcher_client.get(reverse("benchmark:run_new")).status_code == 403
    response = researcher_client.post(
        reverse("benchmark:run_new"), launch_form(ready_set, baseline)
    )
    assert response.status_code == 403
    assert not Run.objects.exists()


def test_launching_from_the_form_runs_every_conversation_in_the_background(
    admin_client_, ready_set, baseline, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_.post(
            reverse("benchmark:run_new"), launch_form(ready_set, baseline)
        )
    run = Run.objects.get(name="From the form")
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:run", args=[run.pk])
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == SET_SIZE * 2
    assert run.status == JobStatus.FINISHED


def test_the_launch_form_refuses_an_unknown_provider(admin_client_, ready_set, baseline):
    response = admin_client_.post(
        reverse("benchmark:run_new"), launch_form(ready_set, baseline, models="acme/robot")
    )
    assert response.status_code == 200
    assert "acme" in response.content.decode()
    assert not Run.objects.exists()


def test_the_launch_form_shows_a_run_error(admin_client_, ready_set, baseline):
    response = admin_client_.post(
        reverse("benchmark:run_new"),
        launch_form(ready_set, baseline, models="offline/careful\noffline/careful"),
    )
    assert response.status_code == 200
    assert "chosen twice" in response.content.decode()


def test_the_run_page_shows_progress_costs_and_conversations(researcher_client, played_run):
    response = researcher_client.get(reverse("benchmark:run", args=[played_run.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert response.context["progress"]["finished"] == SET_SIZE * 2
    assert {row["purpose"] for row in response.context["costs"]} == {
        "roster",
        "patient",
        "assistant",
    }
    assert "scripted, not a model" in page
    assert str(played_run.conversations.first().public_id) in page
    assert "Pause" not in page  # controls are for admins


def test_the_run_page_filters_conversations_by_agent_and_status(researcher_client, played_run):
    agent = played_run.agents.get(model="offline/careless")
    response = researcher_client.get(
        reverse("benchmark:run", args=[played_run.pk]), {"agent": agent.pk, "status": "finished"}
    )
    shown = list(response.context["page"])
    assert len(shown) == SET_SIZE and {c.run_agent_id for c in shown} == {agent.pk}


def test_the_progress_fragment_is_only_the_progress_panel(researcher_client, run):
    response = researcher_client.get(
        reverse("benchmark:run", args=[run.pk]), {"fragment": "progress"}, **HTMX
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="run-progress"')
    assert 'hx-trigger="every 2s"' in page  # still running: keeps polling
    assert "<html" not in page and "Conversations" not in page


def test_admins_can_pause_a_run(admin_client_, run):
    response = control(admin_client_, run, "pause")
    run.refresh_from_db()
    assert response.status_code == 302 and run.status == JobStatus.PAUSED


def test_admins_can_cancel_a_run(admin_client_, run):
    control(admin_client_, run, "cancel")
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED
    assert set(run.conversations.values_list("termination_reason", flat=True)) == {
        Termination.CANCELLED
    }


def test_admins_can_resume_with_retries_and_a_new_cost_limit(
    admin_client_, run, eager_tasks, django_capture_on_commit_callbacks
):
    runs.run_cancel(run)
    with django_capture_on_commit_callbacks(execute=True):
        control(admin_client_, run, "resume", retry_failed="1", cost_limit="12.50")
    run.refresh_from_db()
    assert run.cost_limit_usd == Decimal("12.50")
    assert run.status == JobStatus.FINISHED
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == SET_SIZE * 2


def test_a_bad_cost_limit_is_reported_and_nothing_changes(admin_client_, run):
    runs.run_pause(run)
    response = control(admin_client_, run, "resume", cost_limit="lots")
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("not an amount" in m for m in messages)


def test_researchers_cannot_control_runs(researcher_client, run):
    assert control(researcher_client, run, "cancel").status_code == 403
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


def test_an_unknown_control_action_is_not_found(admin_client_, run):
    assert control(admin_client_, run, "explode").status_code == 404


def test_controls_need_a_post(admin_client_, run):
    response = admin_client_.get(reverse("benchmark:run_control", args=[run.pk, "pause"]))
    assert response.status_code == 405


def test_the_export_has_one_conversation_per_line_with_its_full_trace(
    researcher_client, played_run
):
    response = researcher_client.get(reverse("benchmark:run_export", args=[played_run.pk]))
    lines = b"".join(response.streaming_content).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert "attachment" in response["Content-Disposition"]
    assert len(records) == played_run.conversations.count()
    first = records[0]
    stored = played_run.conversations.get(public_id=first["conversation_id"])
    assert [e["event_id"] for e in first["events"]] == list(
        stored.events.values_list("event_id", flat=True)
    )
    assert first["agent"]["model"] in {"offline/careful", "offline/careless"}
    assert first["agent"]["scripted"] is True
    assert first["write_actions"] == stored.write_actions
    assert first["sandbox_initial"] and first["final_state_hash"] == stored.final_state_hash


def test_the_conversation_page_shows_tool_calls_inline(researcher_client, played_run):
    call = TraceEvent.objects.filter(conversation__run=played_run, kind="tool_call").first()
    conversation = call.conversation
    response = researcher_client.get(
        reverse("benchmark:conversation", args=[conversation.public_id])
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert f'id="{call.event_id}"' in page and call.tool_name in page
    assert "scripted, not a model" in page
    assert "Sandbox before and after" in page
    assert response.context["sandbox_diff"]


def test_a_failed_conversation_page_says_it_is_not_scored(researcher_client, run):
    conversation = run.conversations.first()
    run.conversations.filter(pk=conversation.pk).update(
        status=ConversationStatus.FAILED,
        termination_reason=Termination.PROVIDER_ERROR,
        error="upstream 503",
    )
    page = researcher_client.get(
        reverse("benchmark:conversation", args=[conversation.public_id])
    ).content.decode()
    assert "not scored" in page and "upstream 503" in page


def test_a_cancelled_conversation_page_says_it_is_not_scored(researcher_client, run):
    runs.run_cancel(run)
    conversation = run.conversations.first()
    page = researcher_client.get(
        reverse("benchmark:conversation", args=[conversation.public_id])
    ).content.decode()
    assert "not scored" in page


def test_a_malformed_agent_filter_is_ignored(researcher_client, run):
    response = researcher_client.get(reverse("benchmark:run", args=[run.pk]), {"agent": "x"})
    assert response.status_code == 200
    assert response.context["page"].paginator.count == run.conversations.count()
