"""Archives written before the product was renamed (format `healthbench-lab-study-archive`)
are still study archives: the manifest check reads them as before."""

import io
import json
import zipfile

import pytest

from alignment.engine import archive as fmt


def manifest_zip(format_name: str) -> zipfile.ZipFile:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        body = {
            "format": format_name, "format_version": fmt.FORMAT_VERSION, "members": {},
            "created_at": "2026-11-30T10:00:00Z", "app_version": "healthbench-lab 0.1.0",
            "study": {"name": "Calibration round 1"}, "counts": {},
        }  # fmt: skip
        archive.writestr(fmt.MANIFEST, json.dumps(body))
    return zipfile.ZipFile(io.BytesIO(data.getvalue()))


@pytest.mark.parametrize("name", [fmt.FORMAT_NAME, "healthbench-lab-study-archive"])
def test_it_reads_the_manifest_of_both_names(name):
    manifest = fmt.read_manifest(manifest_zip(name))
    assert manifest.study == {"name": "Calibration round 1"}


def test_it_refuses_a_manifest_of_another_format():
    with pytest.raises(fmt.ArchiveError, match="not a study archive"):
        fmt.read_manifest(manifest_zip("another-tool-archive"))
