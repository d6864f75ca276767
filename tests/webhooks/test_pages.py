"""The webhooks pages: register one (its secret shown once), the delivery log, the test
button, turning a hook back on, deleting it; each person sees only their own."""

import pytest
from django.urls import reverse

from tests.conftest import make_user
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services.deliveries import delivery_attempt, ping_record
from webhooks.services.hooks import webhook_create

pytestmark = pytest.mark.django_db


def test_a_new_hooks_secret_is_shown_once(researcher_client, researcher):
    page = reverse("webhooks:hooks")
    response = researcher_client.post(
        page, {"url": "https://example.org/hook", "description": "bot"}
    )
    hook = Webhook.objects.get()
    assert hook.owner == researcher and hook.active
    assert hook.secret in response.content.decode()
    assert hook.secret not in researcher_client.get(page).content.decode()
    assert (
        hook.secret
        not in researcher_client.get(reverse("webhooks:hook", args=[hook.pk])).content.decode()
    )


def test_a_url_that_is_not_http_is_refused_on_the_page(researcher_client):
    response = researcher_client.post(reverse("webhooks:hooks"), {"url": "ftp://example.org/x"})
    assert "must start with http:// or https://" in response.content.decode()
    assert not Webhook.objects.exists()


def test_the_log_shows_each_delivery_and_the_test_button_sends_a_ping(
    researcher_client, hook, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("webhooks.tasks.delivery_send", lambda pk, **kw: sent.append(pk))
    receiver.statuses = [503]
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("webhooks:hook_test", args=[hook.pk]), follow=True
        )
    (ping,) = WebhookDelivery.objects.all()
    assert sent == [ping.pk] and ping.event == "ping"
    assert "A test event is on its way" in response.content.decode()
    delivery_attempt(ping.pk)
    page = researcher_client.get(reverse("webhooks:hook", args=[hook.pk])).content.decode()
    assert "HTTP 503" in page and "answered 503" in page and "Failed" in page
    assert 'hx-trigger="every 3s"' not in page  # nothing pending: the log stops polling


def test_a_pending_delivery_keeps_the_log_polling(researcher_client, hook):
    ping_record(hook)
    url = reverse("webhooks:hook", args=[hook.pk])
    assert 'hx-trigger="every 3s"' in researcher_client.get(url).content.decode()
    fragment = researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="delivery-log"') and "<h1>" not in fragment


def test_a_hook_turned_off_can_be_turned_back_on_and_deleted(researcher_client, hook):
    Webhook.objects.filter(pk=hook.pk).update(
        active=False, consecutive_failures=5, disabled_reason="off"
    )
    researcher_client.post(reverse("webhooks:hook_enable", args=[hook.pk]))
    hook.refresh_from_db()
    assert hook.active and hook.consecutive_failures == 0 and hook.disabled_reason == ""
    researcher_client.post(reverse("webhooks:hook_delete", args=[hook.pk]))
    assert not Webhook.objects.exists()


def test_a_researcher_sees_only_their_own_hooks_and_an_admin_sees_all(client, admin_user, hook):
    other = make_user("rob", "researcher")
    client.force_login(other)
    assert client.get(reverse("webhooks:hook", args=[hook.pk])).status_code == 404
    assert client.post(reverse("webhooks:hook_delete", args=[hook.pk])).status_code == 404
    assert hook.url not in client.get(reverse("webhooks:hooks")).content.decode()
    webhook_create(owner=other, url="https://rob.example.org/")
    client.force_login(admin_user)
    page = client.get(reverse("webhooks:hooks")).content.decode()
    assert hook.url in page and "https://rob.example.org/" in page
