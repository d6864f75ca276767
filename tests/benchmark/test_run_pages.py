"""Pages for runs: launch, progress, controls, export, and one conversation's trace."""

import json
from decimal import Decimal

import pytest
from django.urls import reverse

from benchmark.models import ConversationStatus, Run, Termination, TraceEvent
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute
from jobs.models import JobStatus
from tests.benchmark.conftest import SET_SIZE
from tests.support.regions import region

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
        "roster_model": "offline/patient",
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


@pytest.mark.parametrize(
    ("field", "model", "valid"),
    [
        ("models", "offline/carefull", "offline/careful, offline/careless"),
        ("models", "offline/nope", "offline/careful, offline/careless"),
        ("models", "offline/strict", "offline/careful, offline/careless"),
        ("patient_model", "offline/nope", "offline/patient"),
    ],
)
def test_the_launch_form_refuses_an_unknown_offline_behaviour_and_lists_the_valid_ones(
    admin_client_, ready_set, baseline, field, model, valid
):
    response = admin_client_.post(
        reverse("benchmark:run_new"), launch_form(ready_set, baseline, **{field: model})
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "unknown offline behaviour" in page and valid in page
    assert not Run.objects.exists()


def test_a_model_missing_from_the_price_list_is_launched_with_a_warning(
    admin_client_, ready_set, baseline
):
    response = admin_client_.post(
        reverse("benchmark:run_new"),
        launch_form(ready_set, baseline, models="offline/careful\nopenai/gpt-from-the-future"),
        follow=True,
    )
    page = response.content.decode()
    assert Run.objects.get().agents.filter(model="openai/gpt-from-the-future").exists()
    assert "openai/gpt-from-the-future has no price" in page
    assert "offline/careful has no price" not in page  # offline/* is priced (at zero)


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


def poll(client, run, **query) -> str:
    response = client.get(
        reverse("benchmark:run", args=[run.pk]), {"fragment": "progress", **query}, **HTMX
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_progress_poll_is_the_panel_plus_every_changing_region_out_of_band(
    researcher_client, run
):
    page = poll(researcher_client, run)
    assert page.lstrip().startswith('<section id="run-progress"')
    assert 'hx-trigger="every 2s"' in page  # still running: keeps polling
    assert "<html" not in page and "<h1>" not in page
    for region_id in ("run-averages", "run-costs", "run-conversations"):
        assert region(page, region_id).attrs["hx-swap-oob"] == "true", region_id


def test_the_poll_refreshes_rows_costs_and_averages_and_stops_after_the_last_change(
    researcher_client, run
):
    before = poll(researcher_client, run)
    assert "No model calls yet" in region(before, "run-costs").text
    assert region(before, "run-conversations").text.count("Pending") == SET_SIZE * 2
    for conversation in run.conversations.all():
        conversation_execute(conversation.pk)
    runs.run_dispatch(run, lambda ids: None)  # nothing left: the run finishes
    after = poll(researcher_client, run)
    assert "hx-trigger" not in region(after, "run-progress").attrs  # that was the final refresh
    rows = region(after, "run-conversations").text
    assert rows.count("Finished") == SET_SIZE * 2 and "Pending" not in rows
    costs = region(after, "run-costs").text
    assert "assistant" in costs and "No model calls yet" not in costs
    assert f"All agents {SET_SIZE * 2}" in region(after, "run-averages").text


def test_the_poll_keeps_the_filters_and_the_page_of_the_conversation_table(researcher_client, run):
    agent = run.agents.get(model="offline/careless")
    response = researcher_client.get(
        reverse("benchmark:run", args=[run.pk]), {"agent": agent.pk, "status": "pending"}
    )
    polled = region(response.content.decode(), "run-progress").attrs["hx-get"]
    assert polled == response.context["live"].url
    assert f"agent={agent.pk}" in polled and "status=pending" in polled
    assert "page=1" in polled and "fragment=progress" in polled
    refreshed = researcher_client.get(polled, **HTMX)
    assert {c.run_agent_id for c in refreshed.context["page"]} == {agent.pk}


def test_a_paused_run_keeps_refreshing_while_a_conversation_still_runs(researcher_client, run):
    runs.run_pause(run)
    run.conversations.filter(pk=run.conversations.first().pk).update(
        status=ConversationStatus.RUNNING
    )
    assert 'hx-trigger="every 2s"' in poll(researcher_client, run)
    run.conversations.update(status=ConversationStatus.FINISHED)
    assert "hx-trigger" not in poll(researcher_client, run)


def test_the_run_page_shows_average_turns_and_tool_calls_per_conversation(
    researcher_client, played_run
):
    response = researcher_client.get(reverse("benchmark:run", args=[played_run.pk]))
    averages = {row["label"]: row for row in response.context["progress"]["per_agent"]}
    for agent in played_run.agents.all():
        finished = played_run.conversations.filter(run_agent=agent, status="finished")
        tool_calls = TraceEvent.objects.filter(conversation__in=finished, kind="tool_call")
        expected = averages[agent.label]
        assert expected["finished"] == finished.count() == SET_SIZE
        assert expected["turns"] == sum(c.assistant_turns for c in finished) / SET_SIZE
        assert expected["tool_calls"] == tool_calls.count() / SET_SIZE
        assert expected["tool_calls"] > 0
    table = region(response.content.decode(), "run-averages").text
    assert "Avg. assistant turns" in table and "Avg. tool calls" in table
    careful = averages["offline/careful · baseline"]
    assert f"{careful['turns']:.1f}" in table and f"{careful['tool_calls']:.1f}" in table


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


def test_the_tool_call_icon_is_inline_svg_so_it_needs_no_emoji_font(researcher_client, played_run):
    call = TraceEvent.objects.filter(conversation__run=played_run, kind="tool_call").first()
    page = researcher_client.get(
        reverse("benchmark:conversation", args=[call.conversation.public_id])
    ).content.decode()
    start = page.index(f'id="{call.event_id}"')
    summary = page[start : page.index("</summary>", start)]
    assert "<svg" in summary and 'aria-label="tool call"' in summary
    assert all(ord(character) < 0x1F000 for character in page)  # no emoji anywhere


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


def test_a_malformed_agent_filter_is_refused_with_the_reason(researcher_client, run):
    response = researcher_client.get(reverse("benchmark:run", args=[run.pk]), {"agent": "x"})
    assert response.status_code == 400
    assert "&quot;agent&quot; to &quot;x&quot;" in response.content.decode()


def test_the_run_page_says_something_after_every_run_action_and_only_those():
    from benchmark.services.run_control import RUN_ACTIONS
    from benchmark.views import RUN_ACTION_DONE

    assert set(RUN_ACTION_DONE) == set(RUN_ACTIONS)
