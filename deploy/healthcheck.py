"""The web container's health check: the login page answers (any status below 500).

Asked as the proxy in front would ask: for the first host of ALLOWED_HOSTS over HTTPS (the
X-Forwarded-Proto header), so neither the host check nor the HTTPS redirect answers instead of
the site. Standard library only: it runs every 30 s and must start fast.
"""

import os
import sys
import urllib.error
import urllib.request


def first_allowed_host() -> str:
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = hosts[0] if hosts else "localhost"
    return "localhost" if host == "*" else host.lstrip(".")


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer too (the site is up); following it would leave this machine."""

    def redirect_request(self, *args, **kwargs):
        return None


def main() -> int:
    request = urllib.request.Request(
        "http://127.0.0.1:8000/accounts/login/",
        headers={"Host": first_allowed_host(), "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.build_opener(NoRedirects).open(request, timeout=20) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError as error:
        print(f"the site does not answer: {error}")
        return 1
    print(f"the login page answered {status}")
    return 0 if status < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
