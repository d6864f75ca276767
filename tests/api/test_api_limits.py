"""The API's limits hold under concurrency and against guessing: a token's rate across several
gunicorn processes (file cache and Redis), refused tokens per client address (throttled and
audited), and a write the limit refused is not in the audit trail as a write."""

import contextlib
import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core.cache.backends.redis import RedisCache

from accounts.models import Role
from accounts.tokens import token_create
from audit.models import AuditEvent
from bench.load.processes import free_port, gunicorn_start, stop
from common.rate_limits import rate_take
from config.file_caches import LockedFileBasedCache
from tests.conftest import make_user
from tests.support.api import API, bearer
from tests.support.workers import redis_server, test_database_url

pytestmark = pytest.mark.usefixtures("fresh_rate_counts")
running_redis = contextlib.contextmanager(redis_server)
NOW = 1_800_000_030.0  # mid-window: the counting tests never straddle a window's edge


# --- the count itself: atomic in several processes, on both backends ---------------------------


def cache_at(location: str):
    if location.startswith("redis://"):
        return RedisCache(location, {})
    return LockedFileBasedCache(location, {"OPTIONS": {"MAX_ENTRIES": 100_000}})


def take_many(location: str, times: int) -> int:
    """In a process of its own: how many of `times` requests the limit let through."""
    cache = cache_at(location)
    return sum(rate_take(cache, "burst", limit=100, now=NOW).allowed for _ in range(times))


@pytest.fixture(params=["file", "redis"])
def shared_cache(request, tmp_path):
    if request.param == "file":
        yield str(tmp_path / "api-rate")
    else:
        yield from redis_server(tmp_path)


def test_processes_counting_at_once_let_exactly_the_limit_through(shared_cache):
    with multiprocessing.get_context("fork").Pool(6) as pool:
        allowed = pool.starmap(take_many, [(shared_cache, 60)] * 6)
    assert sum(allowed) == 100  # of 360 asked
    assert cache_at(shared_cache).get(f"burst:{int(NOW // 60)}") == 100


# --- the rate of a token across gunicorn processes ----------------------------------------------


@pytest.fixture(params=["file", "redis"])
def site(request, tmp_path, transactional_db):
    """The site behind gunicorn (3 processes x 4 threads) on this test's database."""
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL"}}
    environment |= {"DATABASE_URL": test_database_url(), "DATA_DIR": str(tmp_path)}
    with contextlib.ExitStack() as cleanup:
        if request.param == "redis":
            environment["REDIS_URL"] = cleanup.enter_context(running_redis(tmp_path))
        port = free_port()
        server = gunicorn_start(environment, port=port, workers=3, threads=4,
                                log=tmp_path / "gunicorn.log")  # fmt: skip
        cleanup.callback(stop, server)
        yield f"http://127.0.0.1:{port}{API}"


def concurrently(url: str, tokens: list[str]) -> list[int]:
    def ask(token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.get(f"{url}/case-sets", headers=headers, timeout=120).status_code

    with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
        return list(pool.map(ask, tokens))


@pytest.mark.slow
def test_simultaneous_requests_in_several_processes_keep_each_limit(site, settings):
    _, raw = token_create(user=make_user("rita", Role.RESEARCHER), name="script", scope="read",
                          days=7, requests_per_minute=10)  # fmt: skip
    codes = concurrently(site, [raw] * 40)
    assert sorted(set(codes)) == [200, 429] and codes.count(200) == 10

    limit = settings.API_TOKEN_FAILURES_PER_MINUTE
    codes = concurrently(site, [f"cj_guess-{n}" for n in range(40)])
    assert sorted(set(codes)) == [401, 429] and codes.count(401) == limit
    answered_401 = AuditEvent.objects.filter(action="token.refused", after__throttled=False)
    assert answered_401.count() == limit


# --- refused tokens and throttled writes, through Django's test client -------------------------


@pytest.mark.django_db
def test_refused_tokens_are_audited_and_throttled_per_address(client, researcher, settings):
    settings.API_TOKEN_FAILURES_PER_MINUTE = 3
    guesses = [client.get(f"{API}/runs", **bearer(f"cj_guess-{n}"), REMOTE_ADDR="203.0.113.9")
               for n in range(6)]  # fmt: skip
    assert [r.status_code for r in guesses] == [401, 401, 401, 429, 429, 429]
    assert int(guesses[-1]["Retry-After"]) >= 1
    refused = AuditEvent.objects.filter(action="token.refused")
    assert refused.count() == 3
    assert refused.first().after == {"address": "203.0.113.9", "throttled": False,
                                     "reason": "This token is not known here."}  # fmt: skip
    assert "cj_guess" not in str(list(refused.values()))  # never the text presented
    _, raw = token_create(user=researcher, name="Mine", scope="read", days=7)
    assert client.get(f"{API}/runs", **bearer(raw), REMOTE_ADDR="198.51.100.4").status_code == 200


@pytest.mark.django_db
def test_a_working_token_does_not_count_as_a_guess(client, researcher, settings):
    settings.API_TOKEN_FAILURES_PER_MINUTE = 2
    _, raw = token_create(user=researcher, name="Mine", scope="read", days=7)
    codes = [client.get(f"{API}/runs", **bearer(raw)).status_code for _ in range(5)]
    assert codes == [200] * 5


@pytest.mark.django_db
def test_only_writes_that_were_done_are_audited_as_writes(client, researcher):
    _, raw = token_create(user=researcher, name="Writer", scope="write", days=7,
                          requests_per_minute=3)  # fmt: skip
    body = {"name": "By token", "size": 1}
    codes = [
        client.post(f"{API}/case-sets", payload, content_type="application/json", **bearer(raw))
        .status_code
        for payload in (body, {"size": "many"}, body, body)
    ]  # fmt: skip
    assert codes == [201, 400, 201, 429]
    writes = AuditEvent.objects.filter(action="token.write_used")
    assert [event.after["status"] for event in writes] == [201, 201]
