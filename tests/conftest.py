"""Project-wide fixtures: one user per role and logged-in clients."""

import os

import pytest

from accounts.models import Role, Track, User
from tests.support import fast_flush
from tests.support.legs import leg_select

fast_flush.install()

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The real hasher is slow on purpose; tests create many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def private_webhook_addresses():
    """Test receivers listen on 127.0.0.1: webhooks may go there, in this process and in the
    workers the tests start (the tests of the address rule turn it off)."""
    from django.conf import settings

    os.environ["WEBHOOK_ALLOW_PRIVATE_ADDRESSES"] = "1"
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and the rows its migrations made, which the fast flush
    between transactional tests keeps (tests/support/fast_flush.py)."""
    with django_db_blocker.unblock():
        fast_flush.remember_kept_rows()


def make_user(username: str, role: str, track: str = "") -> User:
    return User.objects.create_user(
        username=username,
        password=PASSWORD,
        role=role,
        track=track,
        licensed=role == Role.ANNOTATOR,
    )


@pytest.fixture
def annotator(db) -> User:
    return make_user("annie", Role.ANNOTATOR, Track.CLINICAL)


@pytest.fixture
def researcher(db) -> User:
    return make_user("rita", Role.RESEARCHER)


@pytest.fixture
def admin_user(db) -> User:
    return make_user("adam", Role.ADMIN)


@pytest.fixture
def users_by_role(annotator, researcher, admin_user) -> dict[str, User]:
    return {Role.ANNOTATOR: annotator, Role.RESEARCHER: researcher, Role.ADMIN: admin_user}


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def admin_client_(client, admin_user):
    client.force_login(admin_user)
    return client


def pytest_collection_modifyitems(config, items):
    kept, deselected = leg_select(items, os.environ.get("TEST_LEG", ""))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
