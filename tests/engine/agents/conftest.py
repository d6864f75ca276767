"""Fixtures for the agent tests: the example case, the baseline agent and the shared time."""

import pytest

from benchmark.engine.agents.agent_config import get_agent_config
from benchmark.engine.agents.loop import CaseInput
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY, EXAMPLE_NOW
from tests.engine.agents.fakes import SEED


@pytest.fixture
def case() -> CaseInput:
    return CaseInput.from_entry(EXAMPLE_ENTRY, SEED)


@pytest.fixture
def baseline():
    return get_agent_config("baseline")


@pytest.fixture
def now():
    return EXAMPLE_NOW
