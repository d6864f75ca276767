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


# --- one address, many usernames ---------------------------------------------------------


@pytest.fixture
def address_limit(settings, person):
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 6
    return 6


def test_one_password_tried_on_many_usernames_locks_the_address(client, address_limit):
    for number in range(address_limit - 1):
        assert log_in(client, "Summer2026!", username=f"guess{number}").status_code == 200
    locked = log_in(client, "Summer2026!", username="guess-last")
    assert locked.status_code == 429
    assert b"wrong passwords from this address, for any accounts" in locked.content
    # The address is locked for every account, even with the right password...
    assert log_in(client, PASSWORD).status_code == 429
    # ...and only the address: the same account logs in from elsewhere.
    assert log_in(client, PASSWORD, address="10.0.0.2").status_code == 302


def test_a_successful_login_does_not_reset_the_address_count(client, address_limit):
    for number in range(address_limit - 2):
        log_in(client, "wrong", username=f"guess{number}")
    assert log_in(client, PASSWORD).status_code == 302  # the guesser's own account
    client.logout()
    log_in(client, "wrong", username="guess-again")
    assert log_in(client, "wrong", username="and-again").status_code == 429


def test_the_address_lock_lifts_after_the_cool_off(client, address_limit):
    for number in range(address_limit):
        log_in(client, "wrong", username=f"guess{number}")
    assert log_in(client, PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert log_in(client, PASSWORD).status_code == 302


def test_the_address_limit_is_higher_than_the_pair_limit_by_default():
    from django.conf import settings

    assert settings.LOGIN_ADDRESS_FAILURE_LIMIT == 20 > settings.AXES_FAILURE_LIMIT == 5
