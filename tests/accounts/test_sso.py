"""Sign-on against a real OpenID Connect provider (tests/support/oidc.py): matching by verified
e-mail, accounts made on first sign-on, the role claim, passwords switched off per role, and a
logout that ends the provider's session too."""

import httpx
import pyotp
import pytest
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from django.urls import reverse

from accounts.models import Role, Track, User
from annotation.models import Project, ProjectMember
from audit.models import AuditEvent
from llm.redaction import redact_configured
from tests.conftest import make_user
from tests.support.oidc import provider_log_out, provider_sign_in, running_provider

# The same on either database: run on the PostgreSQL leg, whose time has room for the
# provider's start (tests/support/legs.py).
pytestmark = pytest.mark.leg("postgres")
SITE = "http://testserver"
PASSWORD = "provider-pass-1"
PEOPLE = {
    "rosa": {"password": PASSWORD, "email": "Rosa@Hospital.example", "email_verified": True,
             "name": "Rosa Reed", "roles": ["carejury-researcher", "other-app-admin"]},
    "carl": {"password": PASSWORD, "email": "carl@hospital.example", "email_verified": True,
             "name": "Carl Cole",
             "roles": ["carejury-annotator-clinical", "carejury-senior", "carejury-project:Ward A",
                       "carejury-project:No such project"]},
    "eve": {"password": PASSWORD, "email": "rita@hospital.example", "email_verified": False,
            "name": "Eve", "roles": ["carejury-admin"]},
    "nobody": {"password": PASSWORD, "email": "n@hospital.example", "email_verified": True,
               "name": "No Role", "roles": []},
}  # fmt: skip


@pytest.fixture(scope="module")
def provider():
    with running_provider(site_url=SITE, people=PEOPLE) as provider:
        yield provider


@pytest.fixture
def sso(settings, provider):
    for name, value in provider.settings(SSO_CLAIM_PREFIX="carejury-").items():
        setattr(settings, name, value)
    return provider


@pytest.fixture
def browser():
    with httpx.Client() as browser:
        yield browser


def test_a_verified_email_finds_the_existing_account(db, client, browser, sso):
    rita = make_user("rita", Role.RESEARCHER)
    rita.email = "rosa@hospital.example"  # the provider's address, in another case
    rita.save()
    answer = provider_sign_in(client, browser, sso, "rosa", PASSWORD)
    assert answer.status_code == 302 and answer["Location"] == "/"
    assert client.get("/").context["user"] == rita
    assert User.objects.count() == 1


def test_a_new_person_gets_an_account_with_the_claimed_role_and_projects(db, client, browser, sso):
    Project.objects.create(name="Ward A")
    provider_sign_in(client, browser, sso, "carl", PASSWORD)
    carl = User.objects.get(username="carl")
    assert (carl.role, carl.track, carl.licensed, carl.senior) == (
        Role.ANNOTATOR, Track.CLINICAL, True, True
    )  # fmt: skip
    assert carl.email == "carl@hospital.example" and not carl.has_usable_password()
    assert ProjectMember.objects.active().filter(annotator=carl, project__name="Ward A").exists()
    assert AuditEvent.objects.filter(action="person.created").exists()
    assert client.get("/").context["user"] == carl


def test_the_claim_changes_the_role_at_the_next_sign_on(db, client, browser, sso):
    rita = make_user("rita", Role.ADMIN)
    rita.email = "rosa@hospital.example"
    rita.save()
    provider_sign_in(client, browser, sso, "rosa", PASSWORD)
    rita.refresh_from_db()
    assert rita.role == Role.RESEARCHER  # the claim says researcher; other apps' words ignored
    assert AuditEvent.objects.filter(action="person.changed").exists()


def test_a_returning_person_whose_claim_names_no_role_keeps_theirs(db, client, browser, sso):
    nora = make_user("nora", Role.RESEARCHER)
    nora.email = "n@hospital.example"
    nora.save()
    provider_sign_in(client, browser, sso, "nobody", PASSWORD)
    nora.refresh_from_db()
    assert nora.role == Role.RESEARCHER and client.get("/").context["user"] == nora


def test_a_deactivated_account_cannot_sign_on(db, client, browser, sso):
    provider_sign_in(client, browser, sso, "rosa", PASSWORD)
    client.logout()
    User.objects.filter(username="rosa").update(is_active=False)
    with httpx.Client() as another_browser:
        answer = provider_sign_in(client, another_browser, sso, "rosa", PASSWORD)
    assert answer["Location"] == reverse("login")
    assert client.get("/").status_code == 302


def test_the_admin_sites_login_leads_to_the_sites_own(client):
    answer = client.get("/admin/login/?next=/admin/")
    assert answer["Location"] == f"{reverse('login')}?next=/admin/"


def test_an_unverified_email_matches_nobody_and_makes_no_second_account(db, client, browser, sso):
    rita = make_user("rita", Role.RESEARCHER)
    rita.email = "rita@hospital.example"
    rita.save()
    answer = provider_sign_in(client, browser, sso, "eve", PASSWORD)
    assert answer["Location"] == reverse("login")
    assert "has not verified it" in client.get(reverse("login")).content.decode()
    assert list(User.objects.all()) == [rita]


def test_a_person_the_claim_gives_no_role_is_refused_without_a_default(
    db, client, browser, settings, sso
):
    settings.SSO_CLAIMS = settings.SSO_CLAIMS | {"default_role": ""}
    answer = provider_sign_in(client, browser, sso, "nobody", PASSWORD)
    assert answer["Location"] == reverse("login")
    assert "no role" in client.get(reverse("login")).content.decode()
    assert not User.objects.filter(email="n@hospital.example").exists()


def test_a_wrong_password_at_the_provider_logs_nobody_in(db, client, browser, sso):
    answer = provider_sign_in(client, browser, sso, "rosa", "not-it")
    assert "Wrong username or password" in answer.text
    assert not User.objects.exists()


def test_logout_ends_the_provider_session_too(db, client, browser, sso):
    provider_sign_in(client, browser, sso, "rosa", PASSWORD)
    logout = client.post(reverse("logout"))
    assert logout["Location"].startswith(f"{sso.issuer}/")
    back = provider_log_out(browser, logout["Location"], SITE)
    assert back == reverse("login")
    assert client.get("/").status_code == 302  # the site's session is gone
    # ...and the provider's: signing on again asks for the password.
    start = client.post("/accounts/oidc/sso/login/", {"next": "/"})
    again = browser.get(start["Location"], follow_redirects=True)
    assert "Test provider: sign in" in again.text


@pytest.mark.parametrize("method", ["client_secret_post"])
def test_the_other_token_auth_method_works(db, client, browser, settings, method):
    with running_provider(site_url=SITE, people=PEOPLE, token_auth_method=method) as provider:
        for name, value in provider.settings(SSO_CLAIM_PREFIX="carejury-").items():
            setattr(settings, name, value)
        answer = provider_sign_in(client, browser, provider, "rosa", PASSWORD)
    assert answer.status_code == 302 and answer["Location"] == "/"


def test_a_role_without_local_passwords_is_refused_at_the_password_form(db, client, settings):
    settings.LOCAL_PASSWORD_ROLES = ("annotator",)
    make_user("rita", Role.RESEARCHER)
    answer = client.post(
        reverse("login"), {"username": "rita", "password": "correct-horse-battery-staple"}
    )
    assert answer.status_code == 200
    assert "signs in through your institution" in answer.content.decode()
    assert client.get("/").status_code == 302


def test_the_login_page_offers_the_sign_on(db, client, sso):
    page = client.get(reverse("login")).content.decode()
    assert 'action="/accounts/oidc/sso/login/"' in page and "Sign in with Test hospital" in page


def test_a_sign_on_asks_for_the_second_factor_of_who_has_one(db, client, browser, sso):
    rita = make_user("rita", Role.RESEARCHER)
    rita.email = "rosa@hospital.example"
    rita.save()
    secret = generate_totp_secret()
    TOTP.activate(rita, secret)
    answer = provider_sign_in(client, browser, sso, "rosa", PASSWORD)
    assert answer["Location"] == reverse("mfa_authenticate")
    assert client.get("/").status_code == 302
    client.post(reverse("mfa_authenticate"), {"code": pyotp.TOTP(secret).now()})
    assert client.get("/").context["user"] == rita


def test_the_client_secret_is_redacted_from_the_log(settings):
    settings.SSO_CLIENT_SECRET = "client-secret-4f1c9a7e2b"
    assert "4f1c9a7e2b" not in redact_configured("token call with client-secret-4f1c9a7e2b")
