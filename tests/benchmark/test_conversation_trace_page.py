"""The conversation page's trace: how the patient's leaving is shown."""

import pytest
from django.urls import reverse

from benchmark.models import Termination, TraceEvent
from benchmark.services.conversations import conversation_execute

pytestmark = pytest.mark.django_db

MARKER = "Patient left the conversation"


@pytest.fixture
def ended_conversation(run):
    conversation = run.conversations.first()
    conversation_execute(conversation.pk)
    conversation.refresh_from_db()
    return conversation


def trace_of(client, conversation) -> str:
    page = client.get(reverse("benchmark:conversation", args=[conversation.public_id]))
    html = page.content.decode()
    return html[html.index("<h2>Trace</h2>") : html.index("<h2>Write actions</h2>")]


def test_the_patients_leaving_is_a_marker_not_an_empty_bubble(
    researcher_client, ended_conversation
):
    assert ended_conversation.termination_reason == Termination.PATIENT_ENDED
    left = ended_conversation.events.order_by("seq").last()
    assert left.kind == "patient_message" and left.content == ""
    trace = trace_of(researcher_client, ended_conversation)
    assert trace.count(MARKER) == 1
    assert f'<div class="trace-marker" id="{left.event_id}">' in trace
    assert f'<div class="msg patient" id="{left.event_id}">' not in trace


def test_a_last_message_that_says_goodbye_is_kept_and_followed_by_the_marker(
    researcher_client, ended_conversation
):
    ended_conversation.events.filter(kind="patient_message", content="").update(
        content="Thanks, bye."
    )
    trace = trace_of(researcher_client, ended_conversation)
    assert "Thanks, bye." in trace
    assert trace.index("Thanks, bye.") < trace.index(MARKER)
    assert trace.count(MARKER) == 1


def test_a_conversation_cut_off_by_the_turn_cap_has_no_marker(
    researcher_client, ended_conversation
):
    type(ended_conversation).objects.filter(pk=ended_conversation.pk).update(
        termination_reason=Termination.TURN_CAP
    )
    TraceEvent.objects.filter(conversation=ended_conversation, content="").delete()
    assert MARKER not in trace_of(researcher_client, ended_conversation)
