import random
import shutil
import socket
import subprocess
import time

import pytest
import redis

from llm.engine.chat import ChatRequest, Message
from llm.engine.providers import ModelClient, ProviderSettings
from tests.fakes.llm_server import running_fake_llm_server


@pytest.fixture
def llm_server():
    with running_fake_llm_server() as server:
        yield server


@pytest.fixture
def sleeps():
    """Records the waits a client asks for instead of sleeping."""
    return []


@pytest.fixture
def make_client(llm_server, sleeps):
    def make(model, *, max_retries=3, timeout_seconds=5.0, **options):
        settings = ProviderSettings(
            openai_api_key="test-openai-key",
            openai_base_url=llm_server.openai_base_url,
            anthropic_api_key="test-anthropic-key",
            anthropic_base_url=llm_server.anthropic_base_url,
            openai_compatible_base_url=llm_server.compatible_base_url,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
        )
        options.setdefault("use_cache", False)
        return ModelClient(
            model, settings=settings, sleep=sleeps.append, rng=random.Random(7), **options
        )

    return make


@pytest.fixture
def user_request():
    """Builds a one-message request: user_request(model, text, **other ChatRequest fields)."""

    def build(model, text="Hello", **fields):
        return ChatRequest(
            model=model,
            purpose="assistant",
            system="You help patients.",
            messages=(Message(role="user", content=text),),
            **fields,
        )

    return build


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH; the Redis-backed limiter is not tested")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_until_answering(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=5)


def _wait_until_answering(url):
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 5
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
