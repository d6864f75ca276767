"""Shared fixtures: the shipped distribution, a fixed date and a scripted chat client."""

from datetime import date

import pytest

from benchmark.engine.distribution import default_distribution
from benchmark.engine.sampler import sample_seeds
from llm.engine.chat import ChatRequest, ChatResponse

TODAY = date(2026, 11, 2)


@pytest.fixture
def distribution():
    return default_distribution()


@pytest.fixture
def today():
    return TODAY


@pytest.fixture
def seed_with(distribution):
    """A sampled seed with chosen attributes overridden (age_range follows age_group)."""

    def build(**overrides):
        seed = {**sample_seeds(distribution, 1, 5)[0], **overrides}
        seed["age_range"] = list(distribution.age_range(seed["age_group"]))
        return seed

    return build


class ScriptedClient:
    """Answers with the given texts in order (an exception is raised instead of answered)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return ChatResponse(text=answer, model=request.model)


@pytest.fixture
def scripted_client():
    return ScriptedClient
