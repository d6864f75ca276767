"""Gives each pytest-xdist worker a data folder of its own, before Django reads its settings.

Loaded with `-p` (pyproject.toml's addopts) because pytest-django imports the settings before
any conftest.py runs. DATA_DIR holds the embedded queue, the model-response cache, the API's
rate counts, mail and exports; two workers sharing them would take each other's queued tasks
and count each other's cache hits. Without xdist (or with DATA_DIR set by the caller) this
changes nothing.
"""

import os
from pathlib import Path

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and not os.environ.get("DATA_DIR"):
    os.environ["DATA_DIR"] = str(Path(__file__).resolve().parents[2] / "var" / f"test-{_worker}")
