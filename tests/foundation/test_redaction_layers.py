"""The last lines behind failure_text: a failure column redacts whatever a service writes into
it, by save(), update() or bulk_create(), and every log record of every logger is redacted
where it is made, whichever handler prints it (Celery replaces the root logger's handlers in a
worker)."""

import io
import logging

import pytest

from benchmark.models import BenchmarkEntry, Conversation
from jury.models import JudgeScore
from tests.support.builders import enriched_set, launched_run

KEY = "sk-proj-Zq81xVbT4mW0cR7nLp2sKd9fHj6gYa3e"
# A configured key with no recognisable shape: only knowing it finds it.
PLAIN_KEY = "sentinel-compatible-31aa7c"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def configured_key(settings):
    settings.OPENAI_COMPATIBLE_API_KEY = PLAIN_KEY


def test_a_failure_column_stores_no_key_however_it_is_written():
    run = launched_run(enriched_set(name="columns", size=1))
    conversation = run.conversations.get()
    conversation.error = f"a service forgot to redact {KEY}"
    conversation.save()
    Conversation.objects.filter(pk=conversation.pk).update(error=f"and again {PLAIN_KEY}")
    stored = Conversation.objects.values_list("error", flat=True).get(pk=conversation.pk)
    assert stored == "and again [redacted]"
    entry = BenchmarkEntry.objects.get()
    entry.failure_reason = f"provider said {KEY}"
    entry.save(update_fields=["failure_reason"])
    assert BenchmarkEntry.objects.get().failure_reason == "provider said [redacted]"


def test_an_unusable_raw_answer_is_stored_without_a_key():
    field = JudgeScore._meta.get_field("raw_output")
    assert field.get_db_prep_save(f"echo {KEY}", connection=None) == "echo [redacted]"


def test_every_logger_redacts_whatever_handler_prints_it(caplog):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # a handler no configuration knows about
    logger = logging.getLogger("some.library.deep.inside")
    logger.addHandler(handler)
    try:
        logger.error("calling with %s and %s", KEY, PLAIN_KEY)
        try:
            raise RuntimeError(f"body: {KEY}")
        except RuntimeError:
            logger.exception("request failed")
    finally:
        logger.removeHandler(handler)
    for text in (stream.getvalue(), caplog.text):
        assert KEY not in text and PLAIN_KEY not in text
        assert "calling with [redacted] and [redacted]" in text
        assert "RuntimeError: body: [redacted]" in text
