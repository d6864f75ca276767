import json

import pytest

from benchmark.engine.sandbox.examples import build_example_sandbox


@pytest.fixture
def sandbox():
    return build_example_sandbox()


@pytest.fixture
def call(sandbox):
    """Run a tool on the example sandbox and return (ok, decoded content)."""

    def run(tool_name, /, **arguments):
        result = sandbox.call(tool_name, arguments)
        return result.ok, json.loads(result.content)

    return run
