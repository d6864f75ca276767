"""Which tests a CI leg runs (TEST_LEG, set by .ci/run; unset, every test runs).

CI runs the suite twice, on SQLite and on PostgreSQL, and a leg must finish in 20 minutes on a
shared two-vCPU machine. A test that touches no database does the same on both legs, so the
PostgreSQL leg leaves it to the SQLite one. The real-worker tests run each queue once, with the
database it is deployed with: the embedded folder queue with SQLite (the default install), Redis
with PostgreSQL (production). Each queue and each database still meets a killed worker in
every CI run. A slow test that does the same on either database says which leg runs it
(`@pytest.mark.leg("postgres")`), to even the legs out. The browser tests run on the SQLite
leg only: what they check is the pages' own script and layout in Chromium, the same whatever
the database; what the server does with their requests on PostgreSQL is checked there by the
tests without a browser.
"""

from __future__ import annotations

import pytest

DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server"}
LEGS = ("sqlite", "postgres")
# Fixtures whose parameter is a shared store with two kinds: the one each leg keeps. The worker
# queue (tests/workers/conftest.py) and the API's rate counts behind gunicorn.
PAIRED = {
    "transport": {"sqlite": "embedded", "postgres": "redis"},
    "site": {"sqlite": "file", "postgres": "redis"},
}


def uses_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") is not None:
        return True
    return bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


def left_to_the_other_leg(item: pytest.Item, leg: str) -> bool:
    only_on = item.get_closest_marker("leg")
    if only_on is not None:
        return only_on.args[0] != leg
    params = getattr(getattr(item, "callspec", None), "params", {})
    for fixture, kept_on in PAIRED.items():
        if fixture in params and params[fixture] != kept_on[leg]:
            return True
    if leg == "postgres":
        return item.get_closest_marker("browser") is not None or not uses_database(item)
    return False


def leg_select(items: list[pytest.Item], leg: str) -> tuple[list, list]:
    """(kept, deselected) for the leg; every test for no leg."""
    if not leg:
        return items, []
    if leg not in LEGS:
        raise pytest.UsageError(f"TEST_LEG is {leg!r}; it is one of {', '.join(LEGS)} or unset")
    kept, deselected = [], []
    for item in items:
        (deselected if left_to_the_other_leg(item, leg) else kept).append(item)
    return kept, deselected
