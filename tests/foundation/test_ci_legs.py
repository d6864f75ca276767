"""The CI legs (tests/support/legs.py): what each leg leaves to the other."""

from types import SimpleNamespace

import pytest

from tests.support.legs import leg_select


def item(name, *, fixtures=(), params=None, marks=(), leg=""):
    def marker(name):
        if name == "leg" and leg:
            return SimpleNamespace(args=(leg,))
        return object() if name in marks else None

    return SimpleNamespace(
        name=name,
        fixturenames=list(fixtures),
        callspec=SimpleNamespace(params=params or {}),
        get_closest_marker=marker,
    )


WORKER = ["transactional_db", "transport"]
ITEMS = [
    item("pure"),
    item("page", fixtures=["client", "db"]),
    item("marked", marks=("django_db",)),
    item("browser", fixtures=["live_server", "page"], marks=("browser", "django_db")),
    item("worker[embedded]", fixtures=WORKER, params={"transport": "embedded"}),
    item("worker[redis]", fixtures=WORKER, params={"transport": "redis"}),
    item("gunicorn[redis]", fixtures=["transactional_db", "site"], params={"site": "redis"}),
    item("on postgres", fixtures=["transactional_db"], leg="postgres"),
    item("on sqlite", fixtures=["transactional_db"], leg="sqlite"),
]


def names(items):
    return [i.name for i in items]


def test_without_a_leg_every_test_runs():
    kept, deselected = leg_select(ITEMS, "")
    assert names(kept) == names(ITEMS) and deselected == []


def test_the_sqlite_leg_runs_the_folder_queue_and_everything_without_a_database():
    kept, deselected = leg_select(ITEMS, "sqlite")
    assert names(kept) == ["pure", "page", "marked", "browser", "worker[embedded]", "on sqlite"]
    assert names(deselected) == ["worker[redis]", "gunicorn[redis]", "on postgres"]


def test_the_postgres_leg_runs_redis_and_only_tests_that_touch_the_database_without_a_browser():
    kept, _ = leg_select(ITEMS, "postgres")
    assert names(kept) == ["page", "marked", "worker[redis]", "gunicorn[redis]", "on postgres"]


def test_an_unknown_leg_is_refused_by_name():
    with pytest.raises(pytest.UsageError, match="'mysql'"):
        leg_select(ITEMS, "mysql")
