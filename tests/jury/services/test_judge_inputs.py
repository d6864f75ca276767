"""A conversation's judge inputs are read and rendered once per process, never served stale."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmark.models import Conversation, TraceEvent
from jury.services.judge_inputs import _LeastRecentlyUsed, judge_inputs


@pytest.fixture
def fresh_cache():
    judge_inputs.cache_clear()
    yield
    judge_inputs.cache_clear()


@pytest.mark.django_db
def test_a_conversation_played_again_is_read_again(played_run, fresh_cache):
    conversation = played_run.conversations.scorable().first()
    first = judge_inputs(conversation)
    assert judge_inputs(conversation) is first

    TraceEvent.objects.filter(conversation=conversation, kind="patient_message").update(
        content="A new attempt said something else."
    )
    Conversation.objects.filter(pk=conversation.pk).update(attempts=conversation.attempts + 1)
    conversation.refresh_from_db()

    again = judge_inputs(conversation)
    assert again is not first
    assert "A new attempt said something else." in again.text.trace


def test_threads_asking_for_the_same_conversation_build_it_once():
    cache = _LeastRecentlyUsed(4)
    builds = []

    def build():
        builds.append(threading.current_thread().name)
        time.sleep(0.05)  # a read and a render, while the other threads ask
        return object()

    with ThreadPoolExecutor(max_workers=8) as pool:
        values = list(pool.map(lambda _: cache.get("conversation 7", build), range(8)))

    assert len(builds) == 1 and len(set(map(id, values))) == 1


def test_when_the_builder_fails_the_waiting_threads_build_it_themselves():
    cache = _LeastRecentlyUsed(4)
    started = threading.Event()

    def failing():
        started.set()
        time.sleep(0.05)
        raise RuntimeError("the database went away")

    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = pool.submit(cache.get, "conversation 7", failing)
        started.wait(10)
        waiting = pool.submit(cache.get, "conversation 7", lambda: "built by the waiter")
        with pytest.raises(RuntimeError):
            failed.result(10)
        assert waiting.result(10) == "built by the waiter"


def test_it_keeps_only_the_most_recent_conversations():
    cache = _LeastRecentlyUsed(2)
    for key in ("a", "b", "a", "c"):
        cache.get(key, lambda key=key: key.upper())
    assert cache.get("a", lambda: "rebuilt") == "A"
    assert cache.get("b", lambda: "rebuilt") == "rebuilt"  # the least recently used went
