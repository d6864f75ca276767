"""The demo's scripted simulated clinician: jury mean + per-rubric bias + noise, rounded.

Pure and seeded, so the demo's alignment figures are the same on every machine. Never used
outside the demo, and everything it writes is marked synthetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

PROFILE_FILE = Path(__file__).resolve().parent.parent / "data" / "simulated_clinician.yaml"


@dataclass(frozen=True)
class SimulatedClinician:
    bias: dict[str, float]
    noise_sd: float
    realism_centre: float
    feedback: str

    def score(self, rubric_id: str, jury_mean: float | None, rng: random.Random) -> int:
        centre = self.realism_centre if jury_mean is None else jury_mean
        value = centre + self.bias.get(rubric_id, 0.0) + rng.gauss(0, self.noise_sd)
        return min(5, max(1, round(value)))


@lru_cache(maxsize=1)
def simulated_clinician(path: Path = PROFILE_FILE) -> SimulatedClinician:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return SimulatedClinician(
        bias={str(k): float(v) for k, v in data["bias"].items()},
        noise_sd=float(data["noise_sd"]),
        realism_centre=float(data["realism_centre"]),
        feedback=str(data["feedback"]),
    )
