"""One vocabulary of evaluation axes for coverage: HealthBench's five, with the other names
criteria use for them (the lab's own axes among them), from a data file users can edit
(rubric_lab/data/evaluation/axes.yaml).

An axis name outside the file's axes and aliases is kept as given (lower-cased), so criteria
uploaded with axes of their own are still reported, on those axes. Pure Python: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

AXES_PATH = Path(__file__).resolve().parent.parent / "data" / "evaluation" / "axes.yaml"


class AxesFileError(ValueError):
    """The axes file is malformed; the message says where."""


@dataclass(frozen=True)
class AxisNames:
    axes: tuple[str, ...]
    aliases: dict[str, str]

    def common(self, name: str) -> str:
        """`name` in the common vocabulary ("" stays "": no axis given)."""
        name = name.strip().lower()
        return self.aliases.get(name, name)


def load_axis_names(path: Path = AXES_PATH) -> AxisNames:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    axes, aliases = data.get("axes"), data.get("aliases") or {}
    if not isinstance(axes, list) or not axes or not all(isinstance(a, str) for a in axes):
        raise AxesFileError(f"{path.name}: axes must be a non-empty list of names")
    if not isinstance(aliases, dict):
        raise AxesFileError(f"{path.name}: aliases must map a name to one of the axes")
    unknown = sorted(str(target) for target in aliases.values() if target not in axes)
    if unknown:
        raise AxesFileError(f"{path.name}: aliases point to {', '.join(unknown)}, not an axis")
    return AxisNames(tuple(axes), {str(k).lower(): v for k, v in aliases.items()})


@lru_cache(maxsize=1)
def axis_names() -> AxisNames:
    return load_axis_names()


def common_axis(name: str) -> str:
    return axis_names().common(name)
