"""The review page costs the same number of SQL queries however long the conversation is."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Assignment
from benchmark.models import TraceEvent

pytestmark = pytest.mark.django_db

EXTRA_TOOL_CALLS = 40


def lengthen(conversation, tool_calls: int) -> int:
    """Append `tool_calls` tool calls, each with its result, to the stored trace."""
    last = conversation.events.order_by("-seq").first()
    rows = []
    for n in range(tool_calls):
        seq, turn = last.seq + 2 * n + 1, last.turn + 1 + n // 3
        rows += [
            TraceEvent(conversation=conversation, event_id=f"x{2 * n:04d}", seq=seq, turn=turn,
                       kind="tool_call", tool_name="list_appointments", arguments={}),
            TraceEvent(conversation=conversation, event_id=f"x{2 * n + 1:04d}", seq=seq + 1,
                       turn=turn, kind="tool_result", tool_name="list_appointments", ok=True,
                       content='{"appointments": []}'),
        ]  # fmt: skip
    TraceEvent.objects.bulk_create(rows)
    return conversation.events.exclude(kind="reasoning").count()


def review_queries(client, assignment) -> tuple[int, str]:
    url = reverse("annotation:review", args=[assignment.public_id])
    client.get(url)  # warm caches that are per process, not per request (parsed rubrics)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_the_review_page_query_count_does_not_grow_with_the_trace(client, study, clinicians):
    me = clinicians[0]
    short_item, long_item = study.items.all()[:2]
    short, long = (
        Assignment.objects.create(item=item, annotator=me, track=me.track, queue_key=str(n))
        for n, item in enumerate((short_item, long_item))
    )
    short_events = short_item.conversation.events.exclude(kind="reasoning").count()
    long_events = lengthen(long_item.conversation, EXTRA_TOOL_CALLS)
    assert long_events >= short_events + 2 * EXTRA_TOOL_CALLS
    client.force_login(me)
    short_count, _ = review_queries(client, short)
    long_count, html = review_queries(client, long)
    assert html.count('class="event ') == long_events  # every event really rendered
    assert long_count == short_count
