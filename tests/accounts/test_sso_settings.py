"""The sign-on's and two factors' settings from the environment, and the claim's words (pure:
no database)."""

import pytest

from accounts.claims import Grants, claim_grants
from config import env, security
from config.env import SettingsError

SSO = {
    "SSO_ISSUER_URL": "https://login.example.org/realms/hospital/",
    "SSO_CLIENT_ID": "carejury",
    "SSO_CLIENT_SECRET": "s3cret",
}


def test_without_an_issuer_there_is_no_sign_on():
    assert env.sso_provider({}) is None


def test_the_provider_settings_come_from_the_environment():
    app = env.sso_provider(SSO | {"SSO_TOKEN_AUTH_METHOD": "client_secret_post"})["openid_connect"][
        "APPS"
    ][0]
    assert app["provider_id"] == "sso" and app["client_id"] == "carejury"
    assert app["settings"]["server_url"] == "https://login.example.org/realms/hospital"
    assert app["settings"]["token_auth_method"] == "client_secret_post"
    assert app["settings"]["oauth_pkce_enabled"] is True


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"SSO_CLIENT_SECRET": ""}, "SSO_CLIENT_SECRET"),
        ({"SSO_ISSUER_URL": "login.example.org"}, "is not an address"),
        ({"SSO_TOKEN_AUTH_METHOD": "private_key_jwt"}, "client_secret_basic or"),
    ],
)
def test_a_bad_sign_on_setting_is_named(changes, words):
    with pytest.raises(SettingsError, match=words):
        env.sso_provider(SSO | changes)


def test_role_lists_are_checked():
    assert env.role_list({"R": "Admin, researcher"}, "R", ()) == ("admin", "researcher")
    assert env.role_list({"R": ""}, "R", ("admin",)) == ()
    assert env.role_list({}, "R", ("admin",)) == ("admin",)
    with pytest.raises(SettingsError, match="unknown roles clinician"):
        env.role_list({"R": "clinician"}, "R", ())


def test_an_unknown_default_role_is_refused():
    with pytest.raises(SettingsError, match="SSO_DEFAULT_ROLE"):
        env.sso_claims({"SSO_DEFAULT_ROLE": "annotator"})


def test_forms_may_lead_to_the_provider_only_when_it_is_set():
    assert "form-action 'self';" in security.content_security_policy()
    policy = security.content_security_policy(sign_on_origin=env.origin_of(SSO["SSO_ISSUER_URL"]))
    assert "form-action 'self' https://login.example.org;" in policy


def test_the_highest_role_wins_and_unknown_words_are_ignored():
    grants = claim_grants(["annotator-clinical", "researcher", "other-app-admin"])
    assert grants == Grants(role="researcher", track="")


def test_a_prefix_keeps_only_the_sites_words():
    grants = claim_grants(
        "carejury-annotator-operational admin carejury-licensed", prefix="carejury-"
    )
    assert (grants.role, grants.track, grants.licensed) == ("annotator", "operational", True)


def test_senior_implies_licensed_and_projects_are_named():
    grants = claim_grants(["annotator-clinical", "senior", "project:Ward A", "project:"])
    assert (grants.licensed, grants.senior, grants.projects) == (True, True, ("Ward A",))


def test_staff_carry_no_annotator_flags():
    assert claim_grants(["admin", "senior", "licensed"]) == Grants(role="admin")


def test_no_role_word_falls_back_to_the_default_or_none():
    assert claim_grants([], default_role="annotator-clinical").role == "annotator"
    assert claim_grants(None).role is None
