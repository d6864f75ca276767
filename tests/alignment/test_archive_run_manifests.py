"""A study archive carries the manifest of each run its conversations came from."""

import pytest
from django.core.cache import cache

from alignment.engine import archive as fmt
from benchmark.engine.manifest import parse_manifest
from benchmark.models import Run
from tests.alignment.archive_support import archive_bytes, build_world, members

pytestmark = pytest.mark.django_db


def test_each_run_of_the_study_has_its_manifest_in_the_archive(scored_job):
    cache.clear()
    study = build_world(scored_job)[0]

    contents = members(archive_bytes(study))

    run = Run.objects.get()
    manifest = parse_manifest(contents["runs/run-1-manifest.json"].decode())
    assert manifest["run"]["config_hash"] == run.config_hash
    assert manifest["data_files"] == run.inputs["data_files"]
    assert "run_benchmark --replay" in contents[fmt.README].decode()
