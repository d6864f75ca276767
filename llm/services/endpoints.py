"""Named model endpoints in force: llm/data/endpoints.yaml, or the newest list an admin
saved in the browser (each save a new row, audited `endpoints.changed` with the text before
and after). Installed as the engine's source in `BenchmarkConfig.ready`, so model strings are
checked against it and calls go where it says, in every process.

Every parse of a model string asks for the list, so it is kept in memory and read again at
most every REFRESH_SECONDS: a saved change reaches running workers within that time, with no
restart. A database that cannot be read (the log redaction asks for endpoint keys in any
context) leaves the last list known in use.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings

from audit.services import audit_record
from llm.engine.providers import endpoints as named
from llm.engine.providers.endpoints import (
    Endpoint,
    EndpointError,
    EndpointSet,
    parse_endpoints,
)
from llm.models import ModelEndpointList

REFRESH_SECONDS = 5.0

_lock = threading.Lock()
_cached: tuple[float, EndpointSet] | None = None


def endpoints_in_force() -> EndpointSet:
    global _cached
    with _lock:
        if _cached is not None and time.monotonic() - _cached[0] < REFRESH_SECONDS:
            return _cached[1]
    try:
        current = _read()
    except Exception:  # noqa: BLE001 - no database here (yet): keep what was known
        return _cached[1] if _cached is not None else named.shipped()
    with _lock:
        _cached = (time.monotonic(), current)
    return current


def endpoints_forget() -> None:
    """Read the list again on the next ask (after a save in this process, and in tests)."""
    global _cached
    with _lock:
        _cached = None


def _read() -> EndpointSet:
    newest = ModelEndpointList.objects.order_by("-pk").values_list("yaml_text", flat=True).first()
    return parse_endpoints(newest) if newest is not None else named.shipped()


def endpoints_text() -> str:
    """The list in force as its YAML text (the editor starts from it)."""
    newest = ModelEndpointList.objects.order_by("-pk").first()
    return newest.yaml_text if newest else named.shipped_text()


def endpoint_list_check(yaml_text: str) -> EndpointSet:
    """The list of a text, or EndpointError naming every problem - among them each key variable
    that may not be sent to an endpoint (one of the site's own settings, or no model key)."""
    endpoint_set = parse_endpoints(yaml_text)
    problems = named.key_variable_problems(endpoint_set, settings.SITE_VARIABLES)
    if problems:
        raise EndpointError(problems)
    return endpoint_set


def endpoint_list_save(*, yaml_text: str, note: str = "", user=None) -> ModelEndpointList:
    """Check and store a new list (EndpointError names every problem; nothing is saved)."""
    endpoint_list_check(yaml_text)
    before = endpoints_text()
    row = ModelEndpointList(yaml_text=yaml_text, note=note, created_by=user)
    row.full_clean()
    row.save()
    audit_record(
        actor=user,
        action="endpoints.changed",
        target=row,
        before={"yaml": before},
        after={"yaml": yaml_text},
        note=note,
    )
    endpoints_forget()
    return row


def endpoint_rows(environment) -> list[dict]:
    """The page's table: each endpoint in force and whether its key variable is set."""
    return [
        {"endpoint": endpoint, "key_state": _key_state(endpoint, environment)}
        for endpoint in endpoints_in_force()
    ]


def _key_state(endpoint: Endpoint, environment) -> str:
    if not endpoint.api_key_env:
        return "not needed"
    if named.key_variable_refusal(endpoint.api_key_env, settings.SITE_VARIABLES):
        return "refused: never sent to an endpoint"
    return "set" if environment.get(endpoint.api_key_env) else "not set"


def endpoint_history() -> list[ModelEndpointList]:
    return list(ModelEndpointList.objects.select_related("created_by")[:20])
