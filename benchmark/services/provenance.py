"""What a run was made with, taken when it launches: the hash of every data file it reads, the
installed package versions and the code's commit (kept on Run.inputs, read by its manifest:
benchmark.services.manifests)."""

from __future__ import annotations

import os
import subprocess
from importlib import metadata
from pathlib import Path

from django.conf import settings

from benchmark.engine.manifest import file_hashes

# Where the data files' paths start; a test points it at a copy.
PROJECT_ROOT = Path(settings.BASE_DIR)
# The data a run reads, from the project root: the distributions, personalities, medicine
# classes, specialties, prompts and agent configurations; which model families take which
# settings; the prices its cost limit is held to; and the shipped rubrics, judge prompt and
# fidelity review prompt its conversations are scored and reviewed with (paths only: the
# benchmark imports neither app).
RUN_DATA = (
    "benchmark/data",
    "llm/data/generation.yaml",
    "llm/data/prices.yaml",
    "jury/data",
    "fidelity/data",
)
DATA_SUFFIXES = (".yaml", ".yml", ".md", ".json", ".txt")
# The packages whose versions can change a run's conversations, scores or statistics.
PACKAGES = (
    "carejury",
    "django",
    "openai",
    "anthropic",
    "celery",
    "pandas",
    "numpy",
    "scipy",
    "statsmodels",
    "krippendorff",
    "pyarrow",
    "pyyaml",
)
# Where the commit comes from when the code is not a git checkout (an image, a wheel).
COMMIT_VARIABLE = "CAREJURY_COMMIT"


def run_data_files() -> dict[str, str]:
    """sha256 of every data file a run reads, by path from the project root."""
    return file_hashes(PROJECT_ROOT, _data_paths(PROJECT_ROOT))


def _data_paths(root: Path) -> list[Path]:
    paths = []
    for name in RUN_DATA:
        path = root / name
        if path.is_dir():
            paths += [p for p in path.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES]
        elif path.is_file():
            paths.append(path)
    return paths


def package_versions() -> dict[str, str]:
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def code_commit() -> dict[str, str]:
    """The commit the code runs from and where that was learnt: git when the site runs from a
    checkout, else the CAREJURY_COMMIT variable, else "unknown"."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    if commit:
        return {"commit": commit, "source": "git"}
    if os.environ.get(COMMIT_VARIABLE):
        return {"commit": os.environ[COMMIT_VARIABLE], "source": COMMIT_VARIABLE}
    return {"commit": "unknown", "source": "unknown"}


def environment() -> dict:
    return {"packages": package_versions(), "code": code_commit()}


def launch_inputs() -> dict:
    """What Run.inputs keeps: the data files' hashes and the environment, as of now."""
    return {"data_files": run_data_files(), "environment": environment()}
