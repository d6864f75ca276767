"""A worker imports the model SDKs it has credentials for while it starts (config/celery.py,
llm.engine.providers.client.adapters_import), not during its first task, where under
many threads the import held every other task back; a worker without credentials imports none."""

import json
import os
import subprocess
import sys

import pytest

from llm.engine.providers.client import (
    ANTHROPIC_ADAPTER,
    OPENAI_ADAPTER,
    SDK_TRANSPORT,
    adapters_configured,
)
from llm.engine.providers.settings import ProviderSettings
from tests.support.workers import ROOT


@pytest.mark.parametrize(
    ("provider_settings", "expected"),
    [
        (ProviderSettings(), ()),
        (ProviderSettings(openai_api_key="k"), (OPENAI_ADAPTER,)),
        (ProviderSettings(openai_compatible_base_url="http://127.0.0.1:9/v1"), (OPENAI_ADAPTER,)),
        (ProviderSettings(endpoint_keys={"local": "k"}), (OPENAI_ADAPTER,)),
        (ProviderSettings(endpoint_keys={"local": ""}), ()),
        (ProviderSettings(anthropic_api_key="k"), (ANTHROPIC_ADAPTER,)),
        (
            ProviderSettings(openai_api_key="k", anthropic_api_key="k"),
            (OPENAI_ADAPTER, ANTHROPIC_ADAPTER),
        ),
    ],
)
def test_the_adapters_a_worker_imports_are_those_it_has_credentials_for(
    provider_settings, expected
):
    assert adapters_configured(provider_settings) == expected


PROBE = """
import json, sys
import django
django.setup()
from celery import signals
import config.celery
signals.worker_init.send(sender=None)
print(json.dumps({name: name in sys.modules for name in sys.argv[1:]}))
"""


PROBED = (OPENAI_ADAPTER, ANTHROPIC_ADAPTER, "anthropic", SDK_TRANSPORT)


def _modules_after_worker_init(tmp_path, **environment) -> dict[str, bool]:
    keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_BASE_URL")
    base = {name: value for name, value in os.environ.items() if name not in keys}
    env = {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": str(tmp_path),
           **environment}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *PROBED],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_starting_worker_with_an_anthropic_key_imports_that_sdk_before_any_task(tmp_path):
    loaded = _modules_after_worker_init(tmp_path, ANTHROPIC_API_KEY="test-key")
    assert loaded == {
        OPENAI_ADAPTER: False,
        ANTHROPIC_ADAPTER: True,
        "anthropic": True,
        SDK_TRANSPORT: True,
    }


def test_a_starting_worker_without_credentials_imports_no_sdk(tmp_path):
    loaded = _modules_after_worker_init(tmp_path)
    assert loaded == {
        OPENAI_ADAPTER: False,
        ANTHROPIC_ADAPTER: False,
        "anthropic": False,
        SDK_TRANSPORT: False,
    }
