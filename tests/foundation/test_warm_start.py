"""A web process loads its URL configuration while it starts (config/warm.py), so the first
request it answers does not pay for importing every view and what they import."""

import json
import os
import subprocess
import sys

from tests.support.workers import ROOT

PROBE = """
import json, sys
import config.wsgi
from django.urls import get_resolver
resolver = get_resolver()
print(json.dumps({
    "urls_loaded": "urlconf_module" in resolver.__dict__,
    "reverse_built": bool(resolver._reverse_dict),
    "views_imported": "alignment.views" in sys.modules,
}))
"""


def test_loading_the_wsgi_application_loads_the_url_configuration_and_its_views(tmp_path):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                   "DATA_DIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "urls_loaded": True, "reverse_built": True, "views_imported": True,
    }  # fmt: skip
