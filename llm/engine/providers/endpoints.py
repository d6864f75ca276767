"""Named model endpoints: any number of OpenAI-compatible servers (vLLM, Ollama, llama.cpp, a
hosted service), each with a name that model strings use as their provider -
`vllm-a/llama-3.3-70b`, `ollama/qwen3` - a base URL, the name of the environment variable
holding its key (none for a local server that needs none), and optionally a rate limit
(requests / tokens per minute, shared by every model on the server) and a concurrency cap
(calls in flight at once from one process).

The list is a data file (`llm/data/endpoints.yaml`, the default); admins edit it in the
browser (llm.services.endpoints stores each edit and installs it as the source here with
`use_source`). Pure: no Django.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from common.safe_yaml import safe_load
from llm.engine.providers.catalog import RateLimit

ENDPOINTS_PATH = Path(__file__).resolve().parents[2] / "data" / "endpoints.yaml"
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
# An endpoint's key is sent to the endpoint's address: only a variable meant as a model key.
MODEL_KEY_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,91}_API_KEY$")
BUILT_IN = ("openai", "anthropic", "openai-compatible", "offline")  # model_strings.PROVIDERS
FIELDS = (
    "name",
    "base_url",
    "api_key_env",
    "requests_per_minute",
    "tokens_per_minute",
    "concurrency",
)


class EndpointError(ValueError):
    """The endpoint list cannot be used; `problems` names each one (entry and field)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str
    api_key_env: str = ""  # blank: the server needs no key
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrency: int | None = None

    @property
    def limit(self) -> RateLimit:
        return RateLimit(self.requests_per_minute, self.tokens_per_minute)


@dataclass(frozen=True)
class EndpointSet:
    endpoints: tuple[Endpoint, ...] = ()

    def get(self, name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(endpoint.name for endpoint in self.endpoints)

    def __iter__(self) -> Iterator[Endpoint]:
        return iter(self.endpoints)


def parse_endpoints(text: str) -> EndpointSet:
    """The endpoints of a YAML text (`endpoints:` a list of mappings), every problem named."""
    try:
        data = safe_load(text) or {}
    except Exception as error:  # a YAML syntax error or an alias bomb, said in its own words
        raise EndpointError([f"not readable as YAML: {error}"]) from None
    raw_list = data.get("endpoints") if isinstance(data, dict) else None
    if raw_list is None:
        raw_list = [] if isinstance(data, dict) and not data else None
    if not isinstance(raw_list, list):
        raise EndpointError(["expected a top-level 'endpoints' list"])
    problems: list[str] = []
    endpoints = []
    for position, raw in enumerate(raw_list, start=1):
        endpoint = _endpoint(position, raw, problems)
        if endpoint is not None:
            endpoints.append(endpoint)
    names = [endpoint.name for endpoint in endpoints]
    twice = sorted({name for name in names if names.count(name) > 1})
    problems += [f"the name {name!r} is used twice" for name in twice]
    if problems:
        raise EndpointError(problems)
    return EndpointSet(tuple(endpoints))


def _endpoint(position: int, raw, problems: list[str]) -> Endpoint | None:
    if not isinstance(raw, dict):
        problems.append(f"entry {position}: expected a mapping of fields")
        return None
    label = f"entry {position} ({raw.get('name', 'no name')})"
    before = len(problems)
    unknown = sorted(set(map(str, raw)) - set(FIELDS))
    if unknown:
        problems.append(f"{label}: unknown fields {', '.join(unknown)}")
    name = str(raw.get("name", ""))
    if not NAME.match(name):
        problems.append(f"{label}: name must be lower-case letters, digits, - or _ (up to 40)")
    elif name in BUILT_IN:
        problems.append(f"{label}: {name!r} is a built-in provider; choose another name")
    base_url = str(raw.get("base_url", ""))
    if urlparse(base_url).scheme not in ("http", "https") or not urlparse(base_url).netloc:
        problems.append(f"{label}: base_url must be an http:// or https:// address")
    key_env = str(raw.get("api_key_env") or "")
    if key_env and not ENV_NAME.match(key_env):
        problems.append(f"{label}: api_key_env must name an environment variable (A-Z, 0-9, _)")
    numbers = {
        f: _positive(raw.get(f), f"{label}: {f}", problems)
        for f in ("requests_per_minute", "tokens_per_minute", "concurrency")
    }
    if len(problems) > before:
        return None
    return Endpoint(name=name, base_url=base_url.rstrip("/"), api_key_env=key_env, **numbers)


def key_variable_refusal(name: str, site_variables: Collection[str]) -> str | None:
    """Why the variable `name` may not hold an endpoint's key (None: it may). Checked when a
    list is saved and again before each call, so a list stored before the rule sends nothing."""
    if name in site_variables:
        return (
            f"{name} is one of the site's own settings and is never sent to an endpoint; "
            "name a variable of the endpoint's own, e.g. VLLM_A_API_KEY"
        )
    if not MODEL_KEY_NAME.match(name):
        return (
            f"{name} does not end in _API_KEY; only a variable meant as a model key is sent "
            "to an endpoint (e.g. VLLM_A_API_KEY)"
        )
    return None


def key_variable_problems(endpoint_set: EndpointSet, site_variables: Collection[str]) -> list[str]:
    """Each endpoint whose api_key_env may not hold its key, named with the reason."""
    return [
        f"{endpoint.name}: api_key_env {refusal}"
        for endpoint in endpoint_set
        if endpoint.api_key_env
        and (refusal := key_variable_refusal(endpoint.api_key_env, site_variables))
    ]


def _positive(value, label: str, problems: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(f"{label} must be a whole number of at least 1, got {value!r}")
        return None
    return value


def shipped_text() -> str:
    return ENDPOINTS_PATH.read_text(encoding="utf-8")


# --- the endpoints in force --------------------------------------------------------------------

_source: Callable[[], EndpointSet] | None = None
_shipped: EndpointSet | None = None
_lock = threading.Lock()


Source = Callable[[], EndpointSet]


def use_source(source: Source | None) -> Source | None:
    """Where `in_force` reads the list from (None: the shipped file); returns the one before."""
    global _source
    previous, _source = _source, source
    return previous


def in_force() -> EndpointSet:
    """The endpoints model strings are checked against and calls are sent to."""
    return _source() if _source is not None else shipped()


def shipped() -> EndpointSet:
    global _shipped
    with _lock:
        if _shipped is None:
            _shipped = parse_endpoints(shipped_text())
        return _shipped


# --- concurrency caps --------------------------------------------------------------------------

_caps: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def concurrency_slot(endpoint: Endpoint) -> threading.BoundedSemaphore | None:
    """The process's semaphore for the endpoint's cap (None: no cap), shared by every client."""
    if endpoint.concurrency is None:
        return None
    with _lock:
        key = (endpoint.name, endpoint.concurrency)
        if key not in _caps:
            _caps[key] = threading.BoundedSemaphore(endpoint.concurrency)
        return _caps[key]
