"""The whole sign-on in Chromium against a real OpenID provider (tests/support/oidc.py): the
provider's own login page, a researcher made on first sign-on who must set up an authenticator
app (a real code from its secret), a logout that ends the provider's session too, and the next
sign-on asking for the password and the second factor again (a recovery code)."""

import re

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from playwright.sync_api import expect

from accounts.models import Role, User
from tests.support.oidc import running_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "provider-pass-1"
PEOPLE = {
    "rosa": {"password": PASSWORD, "email": "rosa@hospital.example", "email_verified": True,
             "name": "Rosa Reed", "roles": ["researcher"]},
}  # fmt: skip


@pytest.fixture
def site(live_server, settings):
    # Cookies are per host: the site and the provider's redirects all use 127.0.0.1.
    url = live_server.url.replace("localhost", "127.0.0.1")
    with running_provider(site_url=url, people=PEOPLE) as provider:
        for name, value in provider.settings().items():
            setattr(settings, name, value)
        settings.TWO_FACTOR_REQUIRED_ROLES = ("researcher", "admin")
        yield url


def provider_login(page, password: str) -> None:
    expect(page.get_by_role("heading", name="Test provider: sign in")).to_be_visible()
    page.fill("input[name=username]", "rosa")
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def test_sign_on_two_factors_and_logout_of_both(page, site):
    page.goto(f"{site}/accounts/login/")
    page.get_by_role("button", name="Sign in with Test hospital").click()
    provider_login(page, "wrong")
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")
    provider_login(page, PASSWORD)
    # A researcher: the authenticator app comes first.
    page.wait_for_url(f"{site}/accounts/2fa/totp/activate/")
    assert User.objects.get(username="rosa").role == Role.RESEARCHER
    secret = page.locator("#authenticator_secret").input_value()
    page.fill("input[name=code]", pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Activate").click()
    page.goto(f"{site}/")
    expect(page.locator(".who")).to_contain_text("rosa · Researcher")
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(re.compile(rf"{re.escape(site)}/accounts/login/"))
    # The provider's session ended too: it asks for the password, then the site for a code.
    page.get_by_role("button", name="Sign in with Test hospital").click()
    provider_login(page, PASSWORD)
    page.wait_for_url(f"{site}/accounts/2fa/authenticate/")
    codes = Authenticator.objects.get(user__username="rosa", type="recovery_codes")
    page.fill("input[name=code]", RecoveryCodes(codes).get_unused_codes()[0])
    page.get_by_role("button", name="Sign In").click()
    page.wait_for_url(f"{site}/")
    assert page.console_errors == []
