import threading
import time
import uuid
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm.engine.chat import ProviderError
from llm.engine.providers import (
    InProcessRateLimiter,
    ModelClient,
    ProviderSettings,
    RateLimit,
    RedisRateLimiter,
)
from llm.engine.providers.catalog import parse_catalog


class FakeClock:
    """A clock that moves only when the limiter sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def limiter_on(clock):
    return InProcessRateLimiter(window_seconds=60, clock=clock, sleep=clock.sleep)


def test_it_holds_a_request_until_the_oldest_leaves_the_window():
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(requests_per_minute=2)

    limiter.acquire("openai/m", limit, 0)
    clock.now += 10
    limiter.acquire("openai/m", limit, 0)
    limiter.acquire("openai/m", limit, 0)

    assert clock.sleeps == [50.0]


def test_it_holds_a_request_while_the_token_budget_is_spent():
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(tokens_per_minute=100)

    limiter.acquire("openai/m", limit, 60)
    limiter.acquire("openai/m", limit, 50)

    assert clock.sleeps == [60.0]


def test_settling_with_the_real_count_frees_the_unused_estimate():
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(tokens_per_minute=100)

    reservation = limiter.acquire("openai/m", limit, 90)
    limiter.settle(reservation, 10)
    limiter.acquire("openai/m", limit, 80)

    assert clock.sleeps == []


def test_a_call_larger_than_the_budget_waits_for_an_empty_window_instead_of_forever():
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(tokens_per_minute=100)

    limiter.acquire("openai/m", limit, 30)
    limiter.acquire("openai/m", limit, 5000)

    assert clock.sleeps == [60.0]


def test_models_have_separate_limits():
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(requests_per_minute=1)

    limiter.acquire("openai/a", limit, 0)
    limiter.acquire("openai/b", limit, 0)

    assert clock.sleeps == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.floats(0, 30)),  # (tokens, pause before the call)
        min_size=1,
        max_size=30,
    ),
    st.integers(1, 5),
    st.integers(40, 120),
)
def test_no_window_ever_holds_more_than_the_limits(calls, max_requests, max_tokens):
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(requests_per_minute=max_requests, tokens_per_minute=max_tokens)
    granted = []

    for tokens, pause in calls:
        clock.now += pause
        limiter.acquire("m", limit, tokens)
        granted.append((clock.now, min(tokens, max_tokens)))

    for start, _ in granted:
        # Same arithmetic as the limiter, so float rounding agrees on who is inside.
        inside = [used for moment, used in granted if moment <= start and moment + 60 - start > 0]
        assert len(inside) <= max_requests
        assert sum(inside) <= max_tokens


def test_threads_share_one_limit():
    limiter = InProcessRateLimiter(window_seconds=0.3)
    limit = RateLimit(requests_per_minute=3)
    granted = []
    lock = threading.Lock()

    def call():
        limiter.acquire("openai/m", limit, 0)
        with lock:
            granted.append(time.monotonic())

    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    granted.sort()
    assert granted[2] - started < 0.25
    assert granted[3] - started >= 0.29


def test_the_client_takes_its_limit_from_the_prices_file(make_client, user_request):
    # An openai-compatible entry is written for the configured server: it always holds.
    model = "openai-compatible/llama-3"
    clock = FakeClock()
    catalog = parse_catalog({"models": {model: {"requests_per_minute": 1}}})
    client = make_client(model, catalog=catalog, rate_limiter=limiter_on(clock))

    client.chat(user_request(model))
    client.chat(user_request(model))

    assert clock.sleeps == [60.0]


def test_an_offline_client_needs_no_keys_and_is_free_and_unlimited(user_request):
    client = ModelClient("offline/careful", settings=ProviderSettings())

    assert client.limit.unlimited
    assert client.price is not None and client.base_url == ""
    with pytest.raises(ProviderError) as raised:
        client.chat(replace(user_request("offline/careful"), purpose="no-such-role"))
    assert raised.value.kind == "bad_request"


@pytest.fixture
def redis_limiters(redis_url):
    """Two limiters on one Redis, standing in for two workers; each sleeps for real."""
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        time.sleep(seconds)

    workers = [RedisRateLimiter.from_url(redis_url, window_seconds=0.3, sleep=sleep) for _ in "ab"]
    return workers, waits, f"openai/m-{uuid.uuid4().hex}"


@pytest.mark.redis
def test_workers_share_one_request_limit_through_redis(redis_limiters):
    (first, second), waits, key = redis_limiters
    limit = RateLimit(requests_per_minute=2)

    first.acquire(key, limit, 0)
    first.acquire(key, limit, 0)
    started = time.monotonic()
    second.acquire(key, limit, 0)

    assert waits and 0 < waits[0] <= 0.3
    assert time.monotonic() - started >= 0.2


@pytest.mark.redis
def test_redis_settles_reservations_with_the_real_count(redis_limiters):
    (first, second), waits, key = redis_limiters
    limit = RateLimit(tokens_per_minute=100)

    reservation = first.acquire(key, limit, 90)
    first.settle(reservation, 10)
    second.acquire(key, limit, 80)
    assert waits == []

    second.acquire(key, limit, 50)
    assert len(waits) >= 1
