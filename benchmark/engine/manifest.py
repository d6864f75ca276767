"""A run's manifest: everything needed to launch the same run again and to tell whether its
inputs are still the ones it used.

The manifest is JSON with sorted keys, so two manifests diff line by line. Its sections:
`run` (what `run_benchmark --replay` launches again: set, agents, patient and roster models,
repetitions, max turns, seed, clock), `data_files` (sha256 of every data file the run read,
by path from the project root), `stored` (hashes of what the database held: the distribution
and each agent configuration), `models` (each model string with its generation settings),
`seeds` (the run's, the set's, and a hash of every conversation's), `fingerprints` (the
backends that answered, by model), `environment` (package versions and the code's commit) and
`recorded` (whether the hashes and environment were taken when the run launched or, for runs
older than manifests, when it was exported). Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "carejury-run-manifest"
VERSION = 1
# The sections a manifest must hold to be replayed, and the fields its `run` section must give.
SECTIONS = ("run", "data_files", "stored", "models", "seeds", "environment")
RUN_FIELDS = (
    "benchmark_set",
    "agents",
    "patient_model",
    "roster_model",
    "repetitions",
    "max_turns",
    "seed",
    "clock",
)
MISSING = "missing"


class ManifestError(ValueError):
    """A manifest that cannot be read or replayed, in words for the person who gave it."""


@dataclass(frozen=True)
class Difference:
    """One input that no longer matches: what it is, the hash the run used, the one found."""

    name: str
    expected: str
    found: str

    def describe(self) -> str:
        return f"{self.name}: expected {self.expected}, found {self.found}"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def file_hashes(root: Path, paths: Iterable[Path]) -> dict[str, str]:
    """sha256 of each file, keyed by its path relative to `root` (forward slashes)."""
    return {
        path.relative_to(root).as_posix(): sha256_bytes(path.read_bytes()) for path in sorted(paths)
    }


def seeds_digest(seeds: Iterable[tuple[str, int]]) -> str:
    """One hash for every conversation's seed: (which conversation, its seed) pairs, sorted."""
    lines = sorted(f"{name}={seed}" for name, seed in seeds)
    return sha256_text("\n".join(lines))


def build_manifest(
    *,
    run: Mapping[str, Any],
    data_files: Mapping[str, str],
    stored: Mapping[str, Any],
    models: Mapping[str, Any],
    seeds: Mapping[str, Any],
    fingerprints: Mapping[str, list[str]],
    environment: Mapping[str, Any],
    recorded: str,
) -> dict[str, Any]:
    missing = [name for name in RUN_FIELDS if name not in run]
    if missing:
        raise ManifestError(f"the run section lacks {', '.join(missing)}")
    return {
        "format": FORMAT,
        "version": VERSION,
        "run": dict(run),
        "data_files": dict(data_files),
        "stored": dict(stored),
        "models": dict(models),
        "seeds": dict(seeds),
        "fingerprints": {model: sorted(set(found)) for model, found in fingerprints.items()},
        "environment": dict(environment),
        "recorded": recorded,
    }


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """Canonical JSON: sorted keys, two-space indent, a final newline."""
    return json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def parse_manifest(text: str) -> dict[str, Any]:
    """A manifest read back, its shape checked; ManifestError names what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ManifestError(f"not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f"not a run manifest (its format is not {FORMAT!r})")
    if data.get("version") != VERSION:
        raise ManifestError(f"manifest version {data.get('version')!r}; this site reads {VERSION}")
    absent = [name for name in SECTIONS if not isinstance(data.get(name), dict)]
    if absent:
        raise ManifestError(f"the manifest lacks its {', '.join(absent)} section(s)")
    missing = [name for name in RUN_FIELDS if name not in data["run"]]
    if missing:
        raise ManifestError(f"the manifest's run section lacks {', '.join(missing)}")
    agents = data["run"]["agents"]
    if not isinstance(agents, list) or not agents:
        raise ManifestError("the manifest's run section names no agents")
    if not all(isinstance(agent, dict) and "model" in agent for agent in agents):
        raise ManifestError("each agent of the manifest's run section needs a model")
    return data


def differences(expected: Mapping[str, str], found: Mapping[str, str]) -> list[Difference]:
    """Every name whose hash differs, or that one side lacks (its hash reads "missing")."""
    return [
        Difference(name, expected.get(name, MISSING), found.get(name, MISSING))
        for name in sorted(set(expected) | set(found))
        if expected.get(name) != found.get(name)
    ]
