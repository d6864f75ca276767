"""Webhooks over the JSON API with a token: register (secret once), list, the delivery log,
a test event, delete."""

import pytest

from accounts.tokens import token_create
from tests.support.api import API, bearer
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services.deliveries import delivery_attempt

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


@pytest.fixture
def fresh_rate_counts():
    from django.core.cache import caches

    caches["api"].clear()
    yield
    caches["api"].clear()


def writer(researcher) -> dict:
    return bearer(token_create(user=researcher, name="hooks", scope="write", days=7)[1])


def test_a_script_registers_a_hook_tests_it_reads_the_log_and_deletes_it(
    client, researcher, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr("webhooks.tasks.delivery_send", lambda pk, **kw: None)
    auth = writer(researcher)
    made = client.post(
        f"{API}/webhooks", {"url": receiver.url}, content_type="application/json", **auth
    )
    assert made.status_code == 201, made.content
    hook = made.json()
    assert hook["secret"].startswith("whsec_") and hook["active"] is True
    receiver.secret = hook["secret"]
    listed = client.get(f"{API}/webhooks", **auth).json()
    assert [row["id"] for row in listed] == [hook["id"]] and "secret" not in listed[0]

    with django_capture_on_commit_callbacks(execute=True):
        tested = client.post(f"{API}/webhooks/{hook['id']}/test", **auth)
    assert tested.status_code == 200 and tested.json()["event"] == "ping"
    delivery_attempt(tested.json()["id"])
    assert receiver.requests[0].signature_ok
    (row,) = client.get(f"{API}/webhooks/{hook['id']}/deliveries", **auth).json()
    assert (row["status"], row["attempts"], row["response_status"]) == ("delivered", 1, 200)
    assert row["next_attempt_at"] is None

    assert client.delete(f"{API}/webhooks/{hook['id']}", **auth).status_code == 204
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()


def test_a_url_that_is_not_http_is_a_400_and_a_read_token_may_not_register(client, researcher):
    response = client.post(
        f"{API}/webhooks", {"url": "file:///etc/passwd"}, content_type="application/json",
        **writer(researcher),
    )  # fmt: skip
    assert response.status_code == 400
    assert "http:// or https://" in response.json()["detail"]
    response = client.post(
        f"{API}/webhooks", {"url": "https://example.org:99999/"}, content_type="application/json",
        **writer(researcher),
    )  # fmt: skip
    assert response.status_code == 400 and "port" in response.json()["detail"]
    reader = bearer(token_create(user=researcher, name="r", scope="read", days=7)[1])
    response = client.post(
        f"{API}/webhooks", {"url": "https://example.org"}, content_type="application/json", **reader
    )
    assert response.status_code == 403 and not Webhook.objects.exists()


def test_another_researchers_hook_is_not_found(client, researcher, hook):
    from tests.conftest import make_user

    other = writer(make_user("rob", "researcher"))
    assert client.get(f"{API}/webhooks/{hook.pk}/deliveries", **other).status_code == 404
    assert client.delete(f"{API}/webhooks/{hook.pk}", **other).status_code == 404
    assert client.get(f"{API}/webhooks", **other).json() == []
