"""A helper thread that writes a model call's accounting row (the rubric pipeline's two tracks,
an instance score's criteria) closes its database connection when done: Django leaves a
finished thread's connection to the garbage collector, and a lab job kept dozens open at once,
past PostgreSQL's limit of 100 ("too many clients")."""

import threading
from functools import partial

import pytest
from django.db import connection

from benchmark.models import ModelCall
from jobs.services.accounting import RecordingClient
from llm.engine.chat import ChatRequest, ChatResponse, Message

pytestmark = pytest.mark.django_db(transaction=True)


class Answers:
    def chat(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(text="ok", model=request.model)


def request() -> ChatRequest:
    return ChatRequest(model="offline/standard", purpose="judge", system="s",
                       messages=(Message("user", "hi"),))  # fmt: skip


def test_a_helper_thread_writes_its_row_and_leaves_no_connection_open():
    recorder = RecordingClient(Answers(), owner=partial(ModelCall))
    seen = {}

    def helper():
        recorder.chat(request())
        seen["open"] = connection.connection is not None

    thread = threading.Thread(target=helper)
    thread.start()
    thread.join(timeout=30)

    assert ModelCall.objects.count() == 1 and recorder.unwritten == []
    assert seen == {"open": False}


def test_the_units_own_thread_keeps_its_connection():
    recorder = RecordingClient(Answers(), owner=partial(ModelCall))
    recorder.chat(request())
    assert ModelCall.objects.count() == 1
    assert connection.connection is not None
