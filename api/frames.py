"""pandas tables as JSON rows: missing numbers become null (JSON has no NaN)."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from alignment.engine.bootstrap import Estimate


def frame_rows(frame: pd.DataFrame) -> list[dict]:
    return [{key: plain(value) for key, value in row.items()} for row in frame.to_dict("records")]


def plain(value):
    """A numpy or pandas scalar as a JSON value."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NaT or (not isinstance(value, (list, dict, str)) and pd.isna(value)):
        return None
    return value


def plain_tree(value):
    """Dicts, lists and dataclasses (an `Estimate`, a `Tally`) down to JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: plain_tree(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {str(key): plain_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain_tree(item) for item in value]
    if isinstance(value, pd.DataFrame):
        return frame_rows(value)
    return plain(value)


def figures_tree(value):
    """A report's dataclasses as JSON the way the API declares them: every `Estimate` an
    interval object ({estimate, low, high, ...}), a named tuple (a kappa pair) an object."""
    if isinstance(value, Estimate):
        fields = plain_tree(value)
        return {"estimate": fields.pop("value"), **fields}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: figures_tree(item) for key, item in value._asdict().items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: figures_tree(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): figures_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [figures_tree(item) for item in value]
    return plain_tree(value)
