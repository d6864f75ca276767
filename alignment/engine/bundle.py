"""The shareable report bundle's format: a folder opened from disk, no server and no network.

Pure Python (no Django): alignment.services.bundle decides what goes in; this module says how
the data rides inside the page and how the folder proves it is whole.

- index.html carries every number and conversation as JSON in a `<script
  type="application/json">` element (Django's json_script, which escapes "<", ">" and "&" so a
  message holding "</script>" cannot close it), so the page reads it from file:// where a
  fetch() of a sibling file is refused.
- manifest.json lists every other file of the folder with its size and sha256; `bundle_verify`
  names each file that is missing, unlisted or changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FORMAT_NAME = "carejury-report-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bundle_files(folder: Path) -> list[Path]:
    """Every file of the folder but the manifest, in a stable order."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def manifest_build(folder: Path, *, about: dict[str, Any]) -> dict[str, Any]:
    """The manifest of the folder as it is now: `about` (what was bundled, from which runs,
    with which options) and every file's size and sha256 by its path in the folder."""
    files = {
        path.relative_to(folder).as_posix(): {
            "bytes": path.stat().st_size,
            "sha256": file_sha256(path),
        }
        for path in bundle_files(folder)
    }
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, **about, "files": files}


def manifest_write(folder: Path, manifest: dict[str, Any]) -> Path:
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def bundle_verify(folder: Path) -> list[str]:
    """What is wrong with the folder against its manifest, one sentence per file; empty when
    every listed file is there unchanged and no file is unlisted."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return [f"{MANIFEST} is missing"]
    listed: dict[str, dict] = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
    present = {path.relative_to(folder).as_posix(): path for path in bundle_files(folder)}
    problems = [f"{name} is listed but missing" for name in sorted(set(listed) - set(present))]
    problems += [f"{name} is not listed" for name in sorted(set(present) - set(listed))]
    problems += [
        f"{name} does not match its sha256"
        for name in _common(listed, present)
        if file_sha256(present[name]) != listed[name]["sha256"]
    ]
    return problems


def _common(listed: dict, present: dict) -> Iterable[str]:
    return sorted(set(listed) & set(present))
