"""Worker threads meeting an empty knowledge base at the same time all load the shipped
corpus; none of them fails on a passage another one stored first."""

import threading

import pytest
from django.db import connection

from rubric_lab.models import KnowledgePassage
from rubric_lab.services import knowledge

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_threads_loading_the_shipped_corpus_at_once_both_succeed(monkeypatch):
    corpus = knowledge.shipped_corpus()
    both_read = threading.Barrier(2, timeout=30)
    calls = threading.local()

    def shipped_corpus():
        # The third look at the corpus comes after the stored passages were read and before
        # anything is written: both threads get there before either writes.
        calls.count = getattr(calls, "count", 0) + 1
        if calls.count == 3:
            both_read.wait()
        return corpus

    monkeypatch.setattr(knowledge, "shipped_corpus", shipped_corpus)
    failures = []

    def load():
        try:
            knowledge.knowledge_ensure_shipped()
        except Exception as error:  # noqa: BLE001 - the test reports what a thread raised
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert KnowledgePassage.objects.count() == len(corpus)
