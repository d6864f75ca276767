"""Webhooks go to public addresses only: a URL whose host leads to a loopback, private,
link-local or metadata address is refused when registered, and a delivery whose connection
reaches one is refused before anything is sent, unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES is on.
Host names are looked up through a stand-in resolver (no network)."""

import os
import socket
import subprocess
import sys

import pytest
from django.core.exceptions import ValidationError

from webhooks.engine.addresses import address_refusal
from webhooks.models import DeliveryStatus, Webhook
from webhooks.services.deliveries import delivery_attempt, ping_record
from webhooks.services.hooks import webhook_create, webhook_url_check

PUBLIC = "93.184.216.34"


@pytest.fixture
def private_refused(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    return settings


@pytest.fixture
def resolver(monkeypatch):
    """Host -> addresses, as DNS would answer (an unknown host is not found)."""
    names: dict[str, list[str]] = {}

    def lookup(host, port, *args, **kwargs):
        if host[0].isdigit():  # an address is its own answer
            names.setdefault(host, [host])
        if host not in names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in names[host]]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return names


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.0.0.7", "private"),
        ("192.168.1.20", "private"),
        ("100.64.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fd00:ec2::254", "metadata"),
        ("0.0.0.0", "unspecified"),
    ],
)
def test_an_inside_address_is_refused_saying_what_it_is(address, words):
    assert words in address_refusal(address)


@pytest.mark.parametrize("address", [PUBLIC, "2606:4700::6810:84e5", "8.8.8.8"])
def test_a_public_address_is_allowed(address):
    assert address_refusal(address) == ""


def test_registering_a_url_that_leads_inside_is_refused(private_refused, resolver):
    resolver["hooks.lab.example"] = [PUBLIC]
    resolver["sneaky.example"] = [PUBLIC, "169.254.169.254"]
    assert webhook_url_check("https://hooks.lab.example/in") == "https://hooks.lab.example/in"
    with pytest.raises(ValidationError, match="169.254.169.254 is a link-local"):
        webhook_url_check("https://sneaky.example/in")
    with pytest.raises(ValidationError, match="127.0.0.1 is a loopback.*ALLOW_PRIVATE"):
        webhook_url_check("http://127.0.0.1:8000/admin")
    with pytest.raises(ValidationError, match="could not be looked up"):
        webhook_url_check("https://nowhere.example/in")


def test_the_api_refuses_an_inside_url_with_a_problem(private_refused, researcher_client):
    response = researcher_client.post(
        "/api/v1/webhooks", {"url": "http://10.1.2.3/hook"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "10.1.2.3 is a private address" in response.json()["detail"]
    assert not Webhook.objects.exists()


def test_the_setting_allows_inside_addresses(researcher, receiver):
    hook, _ = webhook_create(owner=researcher, url=receiver.url)
    assert hook.url == receiver.url


def test_a_delivery_that_reaches_an_inside_address_sends_nothing(
    researcher, receiver, private_refused, settings
):
    """Registered while allowed (or before a name moved inside); refused when sent."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    hook, _ = webhook_create(owner=researcher, url=receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    delivery = ping_record(hook)
    delivery_attempt(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and receiver.requests == []
    assert "127.0.0.1 is a loopback address" in delivery.error
    assert "WEBHOOK_ALLOW_PRIVATE_ADDRESSES is off" in delivery.error


def test_production_refuses_inside_addresses_unless_told(tmp_path):
    """The setting's default, read by a fresh process without the tests' variable."""
    environ = {k: v for k, v in os.environ.items() if k != "WEBHOOK_ALLOW_PRIVATE_ADDRESSES"}
    environ["DATA_DIR"] = str(tmp_path)
    code = "from config import settings; print(settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES)"
    shown = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "False"
