"""Named OpenAI-compatible endpoints: two servers called in one process, each with its own key
(or none), rate limit and concurrency cap; a missing key variable is an error naming the
endpoint; model strings are checked against the endpoints like the built-in providers."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from llm.clients import ModelRouter
from llm.engine.chat import ProviderError
from llm.engine.providers import ModelClient, ProviderSettings, endpoints
from llm.engine.providers.endpoints import Endpoint, EndpointError, EndpointSet
from llm.engine.providers.model_strings import check_model_string, parse_model_string
from llm.engine.providers.settings import endpoint_keys
from tests.fakes.llm_server import answer, running_fake_llm_server


@pytest.fixture
def two_servers():
    with running_fake_llm_server() as first, running_fake_llm_server() as second:
        yield first, second


def endpoint_settings(*endpoint_list, **keys):
    return ProviderSettings(endpoints=EndpointSet(tuple(endpoint_list)), endpoint_keys=keys)


@pytest.fixture
def in_force():
    """Make a list the one in force (as the site's saved list would be) for the test."""

    before = []

    def install(*endpoint_list):
        before.append(endpoints.use_source(lambda: EndpointSet(tuple(endpoint_list))))

    yield install
    if before:
        endpoints.use_source(before[0])


def test_two_endpoints_answer_in_one_router_each_with_its_own_key(
    two_servers, user_request, in_force
):
    first, second = two_servers
    vllm = Endpoint("vllm-a", first.openai_base_url, api_key_env="VLLM_A_API_KEY")
    ollama = Endpoint("ollama", second.openai_base_url)
    in_force(vllm, ollama)
    router = ModelRouter(settings=endpoint_settings(vllm, ollama, **{"vllm-a": "key-a"}),
                         use_cache=False)  # fmt: skip
    router.chat(user_request("vllm-a/llama-3.3-70b"))
    router.chat(user_request("ollama/qwen3"))
    [to_first], [to_second] = first.requests, second.requests
    assert to_first.body["model"] == "llama-3.3-70b"
    assert to_first.headers["authorization"] == "Bearer key-a"
    assert to_second.body["model"] == "qwen3"
    assert to_second.headers["authorization"] == "Bearer not-needed"


def test_a_missing_key_variable_names_the_endpoint_and_the_variable(in_force):
    hosted = Endpoint("hosted", "https://llm.example.org/v1", api_key_env="HOSTED_API_KEY")
    in_force(hosted)
    with pytest.raises(ProviderError) as refused:
        ModelClient("hosted/big-model", settings=endpoint_settings(hosted))
    message = str(refused.value)
    assert "'hosted'" in message and "HOSTED_API_KEY" in message and "hosted/big-model" in message


def test_model_strings_are_checked_against_the_endpoints_in_force(in_force):
    in_force(Endpoint("vllm-a", "http://gpu-1:8000/v1"))
    assert parse_model_string("vllm-a/meta-llama/Llama-3.3-70B").name == "meta-llama/Llama-3.3-70B"
    with pytest.raises(ProviderError) as refused:
        check_model_string("vllm-b/llama", purpose="assistant")
    assert "vllm-a/<model>" in str(refused.value)


def test_an_endpoint_limit_holds_every_model_on_it_and_its_cap_bounds_calls_in_flight(
    in_force, user_request
):
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def slow(request):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.15)
        with lock:
            in_flight[0] -= 1
        return answer("Okay.")

    with running_fake_llm_server(responder=slow) as server:
        capped = Endpoint("gpu", server.openai_base_url, requests_per_minute=600, concurrency=2)
        in_force(capped)
        settings = endpoint_settings(capped)
        clients = [ModelClient(m, settings=settings, use_cache=False) for m in ("gpu/a", "gpu/b")]
        assert clients[0].limit.requests_per_minute == 600
        assert clients[0]._limit_key == clients[1]._limit_key == "endpoint:gpu"
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: clients[i % 2].chat(user_request(clients[i % 2].model_string)),
                          range(6)))  # fmt: skip
    assert most[0] == 2


@pytest.mark.parametrize(
    "text, problem",
    [
        ("endpoints:\n  - {name: openai, base_url: http://x}", "built-in provider"),
        ("endpoints:\n  - {name: a, base_url: ftp://x}", "base_url"),
        ("endpoints:\n  - {name: a, base_url: http://x, api_key_env: sk-123}", "api_key_env"),
        ("endpoints:\n  - {name: a, base_url: http://x, concurrency: 0}", "concurrency"),
        (
            "endpoints:\n  - {name: a, base_url: http://x}\n  - {name: a, base_url: http://y}",
            "twice",
        ),
        ("endpoints: nope", "'endpoints' list"),
    ],
)
def test_a_bad_endpoint_list_names_its_problem(text, problem):
    with pytest.raises(EndpointError) as refused:
        endpoints.parse_endpoints(text)
    assert problem in str(refused.value)


def test_the_shipped_list_is_valid():
    assert "ollama" in endpoints.parse_endpoints(endpoints.shipped_text()).names


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY"])
def test_an_endpoint_never_sends_a_variable_that_is_no_model_key(variable, in_force, monkeypatch):
    """A list stored before the rule (or written past the save check) still sends nothing."""
    monkeypatch.setenv(variable, "the-site-secret")
    with running_fake_llm_server() as server:
        thief = Endpoint("thief", server.openai_base_url, api_key_env=variable)
        in_force(thief)
        keys = {"thief": "the-site-secret"}
        with pytest.raises(ProviderError) as refused:
            ModelClient("thief/m", settings=endpoint_settings(thief, **keys), use_cache=False)
    assert f"api_key_env {variable} does not end in _API_KEY" in str(refused.value)
    assert server.requests == []


def test_an_endpoint_never_sends_a_variable_the_site_reads_for_itself(in_force):
    site_variables = frozenset({"OPENAI_API_KEY"})
    with running_fake_llm_server() as server:
        thief = Endpoint("thief", server.openai_base_url, api_key_env="OPENAI_API_KEY")
        in_force(thief)
        endpoint_set = EndpointSet((thief,))
        keys = endpoint_keys(endpoint_set, {"OPENAI_API_KEY": "sk-site"}, site_variables)
        assert keys == {}
        settings = ProviderSettings(
            endpoints=endpoint_set, endpoint_keys=keys, site_variables=site_variables
        )
        with pytest.raises(ProviderError, match="OPENAI_API_KEY is one of the site's own"):
            ModelClient("thief/m", settings=settings, use_cache=False)
    assert server.requests == []
