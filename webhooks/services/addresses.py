"""The address rule of webhooks (engine.addresses) applied twice: when a URL is registered
(its host's addresses, looked up then) and at every delivery (the address actually connected
to, since a name may point elsewhere by the time the event is sent). Both are skipped when
WEBHOOK_ALLOW_PRIVATE_ADDRESSES is on."""

from __future__ import annotations

import http.client
import socket
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from webhooks.engine.addresses import address_refusal

SETTING = "WEBHOOK_ALLOW_PRIVATE_ADDRESSES"


class AddressRefused(OSError):
    """A delivery's connection reached an address webhooks may not be sent to."""


def private_allowed() -> bool:
    return settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES


def url_address_check(url: str) -> None:
    """A ValidationError unless every address the URL's host has now is a public one."""
    if private_allowed():
        return
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    try:
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise ValidationError(
            f"The host {parts.hostname} could not be looked up: {error}."
        ) from None
    for *_, sockaddr in found:
        refusal = address_refusal(sockaddr[0])
        if refusal:
            raise ValidationError(
                f"{parts.hostname} leads to {refusal}. Webhooks go to public addresses only "
                f"(an admin can allow private ones with {SETTING})."
            )


def checked_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None):
    """socket.create_connection, then a look at whom it reached: a refused address is closed
    before a byte of the event is sent (or, for https, before the TLS handshake)."""
    sock = socket.create_connection(address, timeout, source_address)
    if private_allowed():
        return sock
    refusal = address_refusal(sock.getpeername()[0])
    if refusal:
        sock.close()
        raise AddressRefused(f"{address[0]} leads to {refusal}; {SETTING} is off")
    return sock


class _CheckedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = checked_connection


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = checked_connection


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_CheckedHTTPConnection, req)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_CheckedHTTPSConnection, req, context=self._context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as a failure with its status: following it would send the
    signed body to a URL the researcher did not register."""

    def redirect_request(self, *args, **kwargs):
        return None


def checked_opener() -> urllib.request.OpenerDirector:
    """What deliveries are sent with: no redirects, and no proxy from the environment (the
    address checked must be the receiver's, not a proxy's)."""
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}),
        _CheckedHTTPHandler(),
        _CheckedHTTPSHandler(),
        _NoRedirects(),
    )
