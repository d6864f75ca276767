"""Sign-on through the institution's OpenID Connect provider (django-allauth's client).

Who a returning person is: the account linked to their provider identity (`sub`) at their
first sign-on; before that, the one active account of this site whose e-mail address is the
one the provider says it verified. Nobody else is matched: an unverified address could be
anyone's. A person matched by neither gets a new account, with the role the claim gives or
SSO_DEFAULT_ROLE (none: refused).

When SSO_ROLE_CLAIM is set and present, the provider is the source of truth for role, track,
licence and senior flag at every sign-on (changes are audited like the People page's), and the
projects it names are joined (accounts.signals.projects_claimed).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

import requests
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse

from accounts.claims import Grants, claim_grants
from accounts.models import AccountOrigin, User
from accounts.services import person_save
from accounts.signals import projects_claimed

log = logging.getLogger(__name__)
SSO_SESSION_KEY = "sso_signed_on"  # the logout also ends the provider's session
TRUE = {"True", "true"}  # email_verified: JSON's true (read as True) or a provider's string


def provider_data(sociallogin) -> dict:
    """The provider's claims about the person: userinfo, else the ID token's."""
    extra = sociallogin.account.extra_data
    return extra.get("userinfo") or extra.get("id_token") or extra


def grants_of(data: dict, *, new_person: bool) -> Grants:
    """What the claim gives; SSO_DEFAULT_ROLE only for a new person (a returning person whose
    claim names no role keeps theirs)."""
    rules = settings.SSO_CLAIMS
    value = data.get(rules["claim"]) if rules["claim"] else None
    default_role = rules["default_role"] if new_person else ""
    return claim_grants(value, prefix=rules["prefix"], default_role=default_role)


def accounts_by_verified_email(data: dict) -> list[User]:
    """The active site accounts with the address the provider verified (none if unverified)."""
    email = (data.get("email") or "").strip()
    verified = settings.SSO_CLAIMS["trust_email"] or str(data.get("email_verified")) in TRUE
    if not email or not verified:
        return []
    return list(
        User.objects.filter(email__iexact=email, origin=AccountOrigin.SITE, is_active=True)[:2]
    )


def grants_apply(person: User, grants: Grants, *, creating: bool = False) -> User:
    """Give the person what the claim says, through the People page's audited service."""
    changes = {}
    if grants.role is not None:
        changes = {
            "role": grants.role,
            "track": grants.track,
            "licensed": grants.licensed,
            "senior": grants.senior,
        }
    if creating or any(getattr(person, name) != value for name, value in changes.items()):
        person_save(person, changes=changes, actor=None, creating=creating)
    if grants.projects:
        projects_claimed.send(sender=User, person=person, projects=grants.projects)
    return person


def sign_on_button() -> dict | None:
    """The login page's sign-on button: its label and where it posts (None: no sign-on)."""
    if not settings.SSO_ENABLED:
        return None
    app = settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"][0]
    url = reverse("openid_connect_login", kwargs={"provider_id": app["provider_id"]})
    return {"name": app["name"], "url": url}


def signed_on(request) -> bool:
    return bool(request.session.get(SSO_SESSION_KEY)) and settings.SSO_ENABLED


def provider_logout_url(request) -> str | None:
    """Where the provider ends its own session and sends the browser back to the login page
    (RP-initiated logout); None when its discovery document names no such endpoint or cannot
    be read (then only this site's session ends)."""
    app = settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"][0]
    try:
        discovery = OpenIDConnectOAuth2Adapter(request, app["provider_id"]).openid_config
    except requests.RequestException as error:
        log.warning("sso: the provider's discovery document could not be read: %s", error)
        return None
    endpoint = discovery.get("end_session_endpoint")
    if not endpoint:
        return None
    back = request.build_absolute_uri(reverse("login"))
    query = urlencode({"client_id": app["client_id"], "post_logout_redirect_uri": back})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def unique_username(data: dict) -> str:
    wanted = data.get("preferred_username") or (data.get("email") or "").split("@")[0]
    base = re.sub(r"[^\w.@+-]", "", wanted)[:140] or "person"
    name, number = base, 1
    while User.objects.filter(username__iexact=name).exists():
        number += 1
        name = f"{base}{number}"
    return name


class SignOnAdapter(DefaultSocialAccountAdapter):
    """allauth's hooks, the site's rules (see the module's docstring)."""

    def is_open_for_signup(self, request, sociallogin) -> bool:
        return True  # people are created on their first sign-on (unless refused below)

    def pre_social_login(self, request, sociallogin) -> None:
        data = provider_data(sociallogin)
        if not sociallogin.is_existing:
            self._match_by_email(request, sociallogin, data)
        grants = grants_of(data, new_person=not sociallogin.is_existing)
        if sociallogin.is_existing:
            person = sociallogin.user
            if not person.is_active or person.is_imported:
                self._refuse(request, "This account is inactive; ask an administrator.")
            grants_apply(person, grants)
        elif grants.role is None:
            self._refuse(
                request,
                "Your sign-in worked, but it gives you no role on this site; ask an "
                "administrator to grant you one.",
            )
        request.session[SSO_SESSION_KEY] = True

    def populate_user(self, request, sociallogin, data):
        person = super().populate_user(request, sociallogin, data)
        claims = provider_data(sociallogin)
        person.username = unique_username(claims)
        person.email = claims.get("email") or ""
        return person

    def save_user(self, request, sociallogin, form=None):
        person = sociallogin.user
        person.set_unusable_password()  # they sign on; an admin may still set a password
        grants = grants_of(provider_data(sociallogin), new_person=True)
        grants_apply(person, grants, creating=True)
        sociallogin.save(request)
        log.info("sso: created %s as %s on first sign-on", person.username, person.role)
        return person

    def is_auto_signup_allowed(self, request, sociallogin) -> bool:
        return True  # username and address come from the provider; no sign-up form here

    def _match_by_email(self, request, sociallogin, data: dict) -> None:
        found = accounts_by_verified_email(data)
        if len(found) > 1:
            self._refuse(
                request, f"Two accounts here use {data['email']}; ask an administrator to keep one."
            )
        if found:
            sociallogin.connect(request, found[0])
        elif data.get("email") and User.objects.filter(email__iexact=data["email"]).exists():
            # Someone else's account may use it: a second account with it would be ambiguous.
            self._refuse(
                request,
                "An account here already uses your e-mail address, but your sign-in service "
                "has not verified it; ask an administrator.",
            )

    def _refuse(self, request, text: str) -> None:
        messages.error(request, text)
        raise ImmediateHttpResponse(redirect("login"))
