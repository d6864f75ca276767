"""Redaction of model identity from the texts an annotator reads.

The trace is the agent's own words and tool use: an agent may name itself ("as an assistant
built by ...") and an error may quote the model string. The review screen passes every text
through one Redactor built from the study's own model strings and labels plus a vendor word
list (annotation/data/blinding.yaml), so blinding does not depend on the agent's manners.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from llm.engine.generation import base_model

BLINDING_FILE = Path(__file__).resolve().parent.parent / "data" / "blinding.yaml"


@lru_cache(maxsize=1)
def blinding_config(path: Path = BLINDING_FILE) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    words = data.get("vendor_words")
    if not isinstance(words, list) or not all(isinstance(w, str) and w for w in words):
        raise ValueError(f"{path.name}: vendor_words must be a list of words")
    return {"replacement": str(data.get("replacement", "[hidden]")), "vendor_words": words}


class Redactor:
    def __init__(self, names: Iterable[str], replacement: str | None = None):
        config = blinding_config()
        self.replacement = replacement or config["replacement"]
        words = {n.strip() for n in [*names, *config["vendor_words"]] if n and len(n.strip()) > 1}
        # Longest first so "offline/careful" goes before "careful"; whole words only, so
        # "Phi" hides the model family without eating "phishing".
        alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
        self.pattern = re.compile(rf"(?<![\w/-])(?:{alternatives})(?![\w-])", re.IGNORECASE)

    def text(self, value: str) -> str:
        return self.pattern.sub(self.replacement, value) if value else value

    def json(self, value: Any) -> Any:
        """The same redaction through every string of a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v) for k, v in value.items()}
        return value


def identity_words(model_strings: Iterable[str], labels: Iterable[str]) -> set[str]:
    """A run's model strings (with and without their generation settings, `gpt-5.5@effort=high`
    names `gpt-5.5` too), their model names without the provider prefix, their labels. An
    offline model's bare name is a behaviour word ("careful"), not an identity, and would blank
    ordinary English: its full string and label are enough."""
    words = set(labels)
    for model in model_strings:
        base = base_model(model)
        provider, _, name = base.partition("/")
        words |= {model, base} if provider == "offline" else {model, base, name}
    return {w for w in words if w}
