"""A real OpenID Connect provider for the sign-on tests: tests/oidc/provider.mjs (the npm package
oidc-provider, installed by `npm ci` in tests/oidc: scripts/bootstrap.sh dev, .ci/run) under the
machine's node. Skips when node or the package is missing.

`provider_sign_in` plays the browser's part with httpx (the provider's login page, its
redirects) and Django's test client (the site): fast, and every protocol step is real: the
authorization request with PKCE, the code exchange and the ID token's signature check by
django-allauth, userinfo, RP-initiated logout.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from config import env, security
from tests.support.workers import free_port

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "oidc"
CLIENT_ID, CLIENT_SECRET = "carejury-test", "test-client-secret-0d9f"
ROLE_CLAIM = "carejury_roles"
CALLBACK_PATH = f"/accounts/oidc/{env.SSO_PROVIDER_ID}/login/callback/"
START_SECONDS = 30  # generous: two cores shared with other test runs


@dataclass
class TestProvider:
    issuer: str
    site_url: str
    token_auth_method: str

    def settings(self, **claims) -> dict:
        """Django settings that point the site at this provider (for `settings` overrides)."""
        environ = {
            "SSO_ISSUER_URL": self.issuer,
            "SSO_CLIENT_ID": CLIENT_ID,
            "SSO_CLIENT_SECRET": CLIENT_SECRET,
            "SSO_TOKEN_AUTH_METHOD": self.token_auth_method,
            "SSO_NAME": "Test hospital",
            "SSO_ROLE_CLAIM": ROLE_CLAIM,
            **claims,
        }
        return {
            "CONTENT_SECURITY_POLICY": security.content_security_policy(sign_on_origin=self.issuer),
            "SOCIALACCOUNT_PROVIDERS": env.sso_provider(environ),
            "SSO_ENABLED": True,
            "SSO_CLAIMS": env.sso_claims(environ),
        }


@contextlib.contextmanager
def running_provider(*, site_url: str, people: dict, token_auth_method="client_secret_basic"):
    node = shutil.which("node")
    if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("node or tests/oidc/node_modules is missing (npm ci in tests/oidc)")
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        people_file = Path(folder, "people.json")
        people_file.write_text(json.dumps(people))
        process = subprocess.Popen(
            [node, str(PROVIDER_DIR / "provider.mjs")],
            env=os.environ
            | {
                "OIDC_PORT": str(port),
                "OIDC_CLIENT_ID": CLIENT_ID,
                "OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "OIDC_TOKEN_AUTH_METHOD": token_auth_method,
                "OIDC_REDIRECT_URI": f"{site_url}{CALLBACK_PATH}",
                "OIDC_POST_LOGOUT_URI": f"{site_url}/accounts/login/",
                "OIDC_ROLE_CLAIM": ROLE_CLAIM,
                "OIDC_PEOPLE": str(people_file),
                "NODE_NO_WARNINGS": "1",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        issuer = f"http://127.0.0.1:{port}"
        try:
            _wait_for_discovery(issuer, process)
            yield TestProvider(issuer, site_url, token_auth_method)
        finally:
            process.terminate()
            process.wait(timeout=10)


def _wait_for_discovery(issuer: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test provider stopped: {process.stderr.read()}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{issuer}/.well-known/openid-configuration").status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the test provider did not answer within {START_SECONDS} s")


class _Forms(HTMLParser):
    """Each form's action and its hidden inputs (the provider's logout confirmation)."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action", ""), "fields": {}})
        elif tag == "input" and self.forms and attrs.get("type") == "hidden":
            self.forms[-1]["fields"][attrs["name"]] = attrs.get("value", "")


def follow_provider(browser: httpx.Client, url: str, site_url: str) -> httpx.Response | str:
    """Follow the provider's redirects; the first address on the site is returned as a path
    with its query (for Django's test client), any other final answer as the response."""
    for _ in range(20):
        if url.startswith(site_url):
            parts = urlsplit(url)
            return f"{parts.path}?{parts.query}" if parts.query else parts.path
        response = browser.get(url)
        if response.status_code not in (302, 303):
            return response
        url = urljoin(url, response.headers["location"])
    raise AssertionError("too many redirects at the provider")


def provider_sign_in(client, browser: httpx.Client, provider: TestProvider, username: str,
                     password: str, next_url: str = "/"):  # fmt: skip
    """Sign on from the site's button to the site's answer to the provider's callback."""
    start = client.post(f"/accounts/oidc/{env.SSO_PROVIDER_ID}/login/", {"next": next_url})
    assert start.status_code == 302, start.content[:300]
    login_page = follow_provider(browser, start["Location"], provider.site_url)
    assert isinstance(login_page, httpx.Response) and "sign in" in login_page.text
    answer = browser.post(
        urljoin(str(login_page.url), f"{urlsplit(str(login_page.url)).path}/login"),
        data={"username": username, "password": password},
    )
    if answer.status_code == 200:  # the provider refused the password
        return answer
    callback = follow_provider(browser, urljoin(str(answer.url), answer.headers["location"]),
                               provider.site_url)  # fmt: skip
    assert isinstance(callback, str), callback.text[:300]
    return client.get(callback)


def provider_log_out(browser: httpx.Client, url: str, site_url: str) -> str:
    """Confirm the provider's logout page; returns where it sends the browser back."""
    confirmation = browser.get(url)
    form = next(f for f in _parse_forms(confirmation.text) if "/session/end" in f["action"])
    answer = browser.post(urljoin(url, form["action"]), data=form["fields"] | {"logout": "yes"})
    back = follow_provider(browser, urljoin(url, answer.headers["location"]), site_url)
    assert isinstance(back, str), back.text[:300]
    return back


def _parse_forms(html: str) -> list[dict]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms
