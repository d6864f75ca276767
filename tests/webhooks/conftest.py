"""Fixtures of the webhook tests: a local receiver that checks signatures, and a hook to it."""

import pytest

from tests.support.receiver import Receiver
from webhooks.services.hooks import webhook_create


@pytest.fixture
def receiver():
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def hook(researcher, receiver):
    made, secret = webhook_create(owner=researcher, url=receiver.url, description="lab bot")
    receiver.secret = secret
    return made


@pytest.fixture
def fast_retries(settings):
    settings.WEBHOOK_BACKOFF_SECONDS = 10.0
    settings.WEBHOOK_BACKOFF_MAX_SECONDS = 1000.0
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_DISABLE_AFTER = 2
    settings.WEBHOOK_TIMEOUT_SECONDS = 5.0
    return settings
