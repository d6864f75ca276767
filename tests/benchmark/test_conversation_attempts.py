"""An attempt whose lease was taken over never overwrites the attempt that owns the row."""

import pytest
from django.db.models import F

from benchmark.models import Conversation, ConversationStatus
from benchmark.services.conversations import conversation_execute
from tests.benchmark.conftest import FakeRouter, use_router


class TakenOverMidway(FakeRouter):
    """On the first assistant call, another worker re-claims the conversation (a new attempt)."""

    def __init__(self, conversation_id: int):
        super().__init__()
        self.conversation_id = conversation_id
        self.taken = False

    def chat(self, request):
        if request.purpose == "assistant" and not self.taken:
            self.taken = True
            Conversation.objects.filter(pk=self.conversation_id).update(attempts=F("attempts") + 1)
        return super().chat(request)


@pytest.mark.django_db
def test_a_superseded_attempt_keeps_its_accounting_but_not_its_outcome(run, monkeypatch):
    conversation = run.conversations.first()
    use_router(monkeypatch, TakenOverMidway(conversation.pk))
    assert conversation_execute(conversation.pk)
    conversation.refresh_from_db()
    assert conversation.status == ConversationStatus.RUNNING  # still owned by attempt 2
    assert conversation.attempts == 2
    assert conversation.events.count() == 0 and conversation.sandbox_final is None
    assert conversation.model_calls.filter(purpose="assistant").exists()  # money was spent
