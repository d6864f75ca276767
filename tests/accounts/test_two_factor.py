"""Two factors with real codes (pyotp computes them from the secret as an authenticator app
does): the code asked after the password, recovery codes, the roles that must set it up, and the
review screen's autosave and idle rules on a session opened with two factors."""

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from django.core.cache import cache
from django.urls import reverse

from accounts.middleware import SECONDS_LEFT_HEADER
from accounts.models import Role
from annotation.services import queue
from tests.annotation.conftest import (
    clinicians,  # noqa: F401
    study,  # noqa: F401 - fixtures
)
from tests.conftest import PASSWORD, make_user
from tests.foundation.test_session_expiry import server_clock  # noqa: F401
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()  # allauth remembers used codes and counts attempts in the default cache


def with_app(user) -> str:
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    return secret


def log_in(client, username: str, next_url: str = "/"):
    return client.post(
        f"{reverse('login')}?next={next_url}", {"username": username, "password": PASSWORD}
    )


def test_a_password_alone_does_not_log_in_who_has_an_authenticator_app(client, annotator):
    secret = with_app(annotator)
    step = log_in(client, annotator.username)
    assert step["Location"] == reverse("mfa_authenticate")
    assert client.get("/").status_code == 302  # not logged in yet
    done = client.post(reverse("mfa_authenticate"), {"code": pyotp.TOTP(secret).now()})
    assert done["Location"] == "/"
    assert client.get("/").context["user"] == annotator


def test_a_wrong_code_is_refused(client, annotator):
    with_app(annotator)
    log_in(client, annotator.username)
    answer = client.post(reverse("mfa_authenticate"), {"code": "000000"})
    assert answer.status_code == 200 and "Incorrect code" in answer.content.decode()
    assert client.get("/").status_code == 302


def test_a_recovery_code_works_once(client, annotator):
    with_app(annotator)
    code = RecoveryCodes.activate(annotator).get_unused_codes()[0]
    log_in(client, annotator.username)
    assert client.post(reverse("mfa_authenticate"), {"code": code})["Location"] == "/"
    client.post(reverse("logout"))
    log_in(client, annotator.username)
    assert client.post(reverse("mfa_authenticate"), {"code": code}).status_code == 200


def test_annotators_may_go_without_a_second_factor(client, annotator, settings):
    settings.TWO_FACTOR_REQUIRED_ROLES = ("researcher", "admin")
    assert log_in(client, annotator.username)["Location"] == "/"
    assert client.get("/").status_code == 200


@pytest.mark.parametrize("role", [Role.RESEARCHER, Role.ADMIN])
def test_staff_must_set_up_an_authenticator_app_before_any_page(client, settings, role):
    settings.TWO_FACTOR_REQUIRED_ROLES = ("researcher", "admin")
    person = make_user("staff", role)
    log_in(client, "staff")
    setup = reverse("mfa_activate_totp")
    assert client.get("/").url == setup
    assert client.get("/", HTTP_HX_REQUEST="true")["HX-Redirect"] == setup
    form = client.get(setup).context["form"]
    activated = client.post(setup, {"code": pyotp.TOTP(form.secret).now()})
    assert activated.status_code == 302
    assert client.get("/").status_code == 200
    assert Authenticator.objects.filter(user=person, type=Authenticator.Type.TOTP).exists()
    # ...and it stays: the app cannot be removed while the role needs it.
    client.post(reverse("mfa_deactivate_totp"))
    assert Authenticator.objects.filter(user=person, type=Authenticator.Type.TOTP).exists()


def test_outside_production_no_role_needs_a_second_factor_by_default(settings):
    assert settings.TWO_FACTOR_REQUIRED_ROLES == ()


def test_autosave_and_idle_rules_hold_on_a_session_opened_with_two_factors(
    client,
    study,  # noqa: F811
    clinicians,  # noqa: F811
    settings,
    server_clock,  # noqa: F811
):
    settings.ANNOTATOR_IDLE_MINUTES = 30
    me = clinicians[0]
    secret = with_app(me)
    assignment = queue.next_assignment(study=study, annotator=me)
    review = reverse("annotation:review", args=[assignment.public_id])
    log_in(client, me.username, review)
    assert (
        client.post(reverse("mfa_authenticate"), {"code": pyotp.TOTP(secret).now()}).url == review
    )
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": f"http://testserver{review}"}
    autosave = reverse("annotation:autosave", args=[assignment.public_id])
    saved = client.post(autosave, {"version": 0, "score-clinical_safety": "3"}, **htmx)
    assert saved.status_code == 200 and int(saved[SECONDS_LEFT_HEADER]) > 29 * 60
    assignment.refresh_from_db()
    assert assignment.scores == {"clinical_safety": 3}
    server_clock.offset = 31 * 60  # idle past the annotators' limit
    late = client.post(autosave, {"version": 1, "score-clinical_safety": "4"}, **htmx)
    assert late["HX-Redirect"].startswith(reverse("login"))
    assignment.refresh_from_db()
    assert assignment.scores == {"clinical_safety": 3}
