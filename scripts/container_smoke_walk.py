"""What a person does first on a freshly started container stack, over HTTP: log in, sample a
small case set, launch an offline run of it and wait until the workers have finished it.

    python3 scripts/container_smoke_walk.py http://127.0.0.1:8000 USERNAME PASSWORD

Run by scripts/container_smoke.sh. Standard library only, so the host's Python runs it. Every
request says X-Forwarded-Proto: https, as the TLS proxy in front of the site would (the stack
trusts it, BEHIND_TLS_PROXY=1); cookies are kept by hand because the site marks them Secure,
which an HTTP client would otherwise never send back over plain HTTP.
"""

from __future__ import annotations

import http.cookies
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

CASES = 2
MODELS = ["offline/careful"]
DEADLINE_SECONDS = 600


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class SmokeFailure(Exception):
    pass


class Site:
    """A logged-in visitor: sends the session and CSRF cookies, the proxy's header and, on
    writes, the CSRF token and an Origin of the site's own https address."""

    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")
        self.origin = "https://" + urllib.parse.urlsplit(self.base_url).netloc
        self.cookies: dict[str, str] = {}
        self.opener = urllib.request.build_opener(NoRedirects)

    def request(self, method: str, path: str, body: bytes | None = None, content_type=""):
        headers = {"X-Forwarded-Proto": "https", "Accept": "application/json, text/html"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if method != "GET":
            headers |= {
                "Origin": self.origin,
                "Referer": self.origin + path,
                "X-CSRFToken": self.cookies.get("csrftoken", ""),
                "Content-Type": content_type,
            }
        request = urllib.request.Request(self.base_url + path, body, headers, method=method)
        try:
            with self.opener.open(request, timeout=30) as response:
                return self._answer(response)
        except urllib.error.HTTPError as error:
            return self._answer(error)

    def _answer(self, response) -> tuple[int, dict, str]:
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response.status, dict(response.headers), response.read().decode()

    def json(self, method: str, path: str, payload: dict | None = None, expect=(200,)) -> dict:
        body = json.dumps(payload).encode() if payload is not None else None
        status, _, text = self.request(method, path, body, "application/json")
        if status not in expect:
            raise SmokeFailure(f"{method} {path} answered {status}: {text[:500]}")
        return json.loads(text)


def log_in(site: Site, username: str, password: str) -> None:
    status, _, page = site.request("GET", "/accounts/login/")
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if status != 200 or not found:
        raise SmokeFailure(f"the login page answered {status} without a CSRF token")
    form = {"csrfmiddlewaretoken": found[1], "username": username, "password": password}
    body = urllib.parse.urlencode(form).encode()
    status, headers, _ = site.request(
        "POST", "/accounts/login/", body, "application/x-www-form-urlencoded"
    )
    if status != 302 or "sessionid" not in site.cookies:
        raise SmokeFailure(f"logging in answered {status}, not a redirect with a session")
    status, _, _ = site.request("GET", "/")
    if status != 200:
        raise SmokeFailure(f"the home page answered {status} after logging in")
    print(f"logged in as {username}, home page 200", flush=True)


def wait_finished(site: Site, path: str, what: str) -> dict:
    """Poll until the job is finished; any other end (failed, cancelled, paused) is a failure."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    last = None
    while time.monotonic() < deadline:
        job = site.json("GET", path)
        shown = (job["status"], json.dumps(job.get("progress"), sort_keys=True))
        if shown != last:
            print(f"{what}: {job['status']} {shown[1]}", flush=True)
            last = shown
        if job["status"] == "finished":
            return job
        if job["status"] in ("failed", "cancelled", "paused"):
            raise SmokeFailure(f"{what} ended {job['status']}: {job}")
        time.sleep(2)
    raise SmokeFailure(f"{what} did not finish within {DEADLINE_SECONDS} s")


def main(base_url: str, username: str, password: str) -> None:
    site = Site(base_url)
    log_in(site, username, password)
    case_set = site.json(
        "POST", "/api/v1/case-sets", {"name": "Container smoke", "size": CASES}, expect=(201,)
    )
    wait_finished(site, f"/api/v1/case-sets/{case_set['id']}", "case set")
    launch = {
        "name": "Container smoke run",
        "benchmark_set": case_set["id"],
        "models": MODELS,
        "max_turns": 4,
        "concurrency": 2,
    }
    run = site.json("POST", "/api/v1/runs", launch, expect=(201,))
    wait_finished(site, f"/api/v1/runs/{run['id']}", "run")
    conversations = site.json("GET", f"/api/v1/runs/{run['id']}/conversations")["results"]
    finished = [c for c in conversations if c["status"] == "finished"]
    if len(finished) != CASES * len(MODELS):
        raise SmokeFailure(f"expected {CASES * len(MODELS)} finished conversations: {finished}")
    print(f"run {run['id']} finished: {len(finished)} conversations", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    try:
        main(*sys.argv[1:])
    except SmokeFailure as failure:
        sys.exit(f"container smoke walk failed: {failure}")
