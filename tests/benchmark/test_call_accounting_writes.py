"""An agent or patient answer is accounted by one INSERT of its own, the moment it arrives."""

from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import ModelCall
from jobs.services import accounting
from llm.engine.chat import ChatRequest, ChatResponse, Message, Usage


class Answering:
    def chat(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(text="Hello", model=request.model, usage=Usage(10, 2))


def _no_transaction(*args, **kwargs):
    raise AssertionError("a single INSERT needs no transaction around it")


def _request() -> ChatRequest:
    return ChatRequest(
        model="offline/careful", purpose="assistant", system="s", messages=(Message("user", "hi"),)
    )


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_each_answer_is_one_insert_and_nothing_else(run, monkeypatch):
    conversation = run.conversations.first()
    owner = partial(ModelCall, run=run, conversation=conversation)
    recorder = accounting.RecordingClient(Answering(), owner=owner)
    # SQLite's BEGIN and COMMIT are not among the captured queries: no transaction is opened.
    monkeypatch.setattr(accounting.transaction, "atomic", _no_transaction)
    with CaptureQueriesContext(connection) as captured:
        recorder.chat(_request())
        recorder.chat(_request())
    assert [query["sql"].split()[0] for query in captured] == ["INSERT", "INSERT"]
    assert ModelCall.objects.filter(conversation=conversation).count() == 2
    assert recorder.unwritten == []


@pytest.mark.django_db
def test_inside_a_transaction_a_failed_write_leaves_the_transaction_usable(run):
    conversation = run.conversations.first()
    recorder = accounting.RecordingClient(
        Answering(), owner=partial(ModelCall, run=run, conversation=conversation)
    )
    recorder.chat(_request())
    key = ModelCall.objects.get(conversation=conversation).answer_key
    # The same key again breaks the unique constraint: the answer waits for the outcome.
    recorder._written(("assistant", ChatResponse(text="x"), key))
    assert ModelCall.objects.filter(conversation=conversation).count() == 1


@pytest.mark.django_db
def test_with_defer_last_the_newest_answer_waits_until_the_next_call_or_the_outcome(run):
    conversation = run.conversations.first()
    added: list = []
    recorder = accounting.RecordingClient(
        Answering(),
        owner=partial(ModelCall, run=run, conversation=conversation),
        also=added.extend,
        defer_last=True,
    )
    first = recorder.chat(_request())
    assert not ModelCall.objects.filter(conversation=conversation).exists()
    assert [response for _, response, _ in recorder.unwritten] == [first]
    second = recorder.chat(_request())  # a repair: the first answer is written before it goes
    assert ModelCall.objects.filter(conversation=conversation).count() == 1
    assert added == [first]
    assert [response for _, response, _ in recorder.unwritten] == [second]
    accounting.unwritten_save(recorder)  # the unit's outcome writes the last one
    assert ModelCall.objects.filter(conversation=conversation).count() == 2
