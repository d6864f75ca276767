"""Repeated wrong passwords lock the (username, address) pair for a while, with a clear page."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.urls import reverse
from django.utils import timezone

from accounts.models import Role
from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db


def log_in(client, password, username="locked-out", address="10.0.0.1"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


@pytest.fixture
def person(db, settings):
    settings.AXES_FAILURE_LIMIT = 3
    return make_user("locked-out", Role.RESEARCHER)


def test_it_locks_after_the_failure_limit_even_for_the_right_password(client, person):
    for _ in range(2):
        assert log_in(client, "wrong").status_code == 200  # the form again, "wrong password"
    locked = log_in(client, "wrong")
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content and b"15 minutes" in locked.content
    assert log_in(client, PASSWORD).status_code == 429


def test_another_address_can_still_log_in_to_the_same_account(client, person):
    for _ in range(3):
        log_in(client, "wrong")
    assert log_in(client, PASSWORD, address="10.0.0.2").status_code == 302


def test_the_lock_lifts_after_the_cool_off(client, person):
    for _ in range(3):
        log_in(client, "wrong")
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert log_in(client, PASSWORD).status_code == 302


def test_a_successful_login_resets_the_count(client, person):
    for _ in range(2):
        log_in(client, "wrong")
    assert log_in(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        log_in(client, "wrong")
    assert log_in(client, PASSWORD).status_code == 302
