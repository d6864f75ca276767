"""Shared medicine-class vocabulary (benchmark/data/drug_classes.yaml), loaded once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

DRUG_CLASSES_PATH = Path(__file__).resolve().parents[1] / "data" / "drug_classes.yaml"
REQUIRED = ("anticoagulants", "immunosuppressants", "supplements")


@lru_cache(maxsize=1)
def drug_classes() -> dict[str, tuple[str, ...]]:
    data = yaml.safe_load(DRUG_CLASSES_PATH.read_text(encoding="utf-8")) or {}
    missing = [name for name in REQUIRED if not data.get(name)]
    if missing:
        raise ValueError(f"{DRUG_CLASSES_PATH.name}: missing or empty: {', '.join(missing)}")
    return {name: tuple(str(word).lower() for word in words) for name, words in data.items()}


ANTICOAGULANTS = drug_classes()["anticoagulants"]
IMMUNOSUPPRESSANTS = drug_classes()["immunosuppressants"]
SUPPLEMENTS = drug_classes()["supplements"]
