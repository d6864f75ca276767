"""A web process loads its URL configuration while it starts (config/warm.py), so the first
request it answers does not pay for importing every view and what they import; then it freezes
what it loaded out of the garbage collector's full passes (a worker does not: config/warm.py)."""

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

FROZEN = """
import gc, json
import config.wsgi
print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}))
"""


def _probe(tmp_path, code: str, *args: str) -> dict:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                   "DATA_DIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_the_wsgi_application_loads_the_url_configuration_and_its_views(tmp_path):
    assert _probe(tmp_path, PROBE) == {
        "urls_loaded": True, "reverse_built": True, "views_imported": True,
    }  # fmt: skip


def test_a_starting_web_process_freezes_its_start_up_out_of_the_collectors_full_passes(
    tmp_path,
):
    # Django, the apps and their libraries: a quarter of a million objects a full pass walked.
    counts = _probe(tmp_path, FROZEN)
    assert counts["frozen"] > 100_000
    assert counts["tracked"] < counts["frozen"] / 10
