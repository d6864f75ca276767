"""How far apart two scores on the 1-5 scale are, in the words the reports use. The one
definition every consumer calls: the alignment engine, its precision planner and pages, the
disagreement ranking, judges' errors, the calibration round report and the jury's inter-judge
agreement (it lives in the jury's engine because every app downstream of the jury reads it).

- adjacent: within 1 point, |a - b| <= 1;
- major disagreement: 2 points or more apart, |a - b| >= 2;
- exact agreement is not a gap but the same score level, both rounded half up
  (alignment.engine.frames.round_half_up, with the same TOLERANCE).

Scores are compared as means (of judges, of clinicians), and floating point misses exact
thresholds: 7/3 - 4/3 is 1.0000000000000002, so a bare `<= 1` calls two means one point apart
"not adjacent". Every comparison here allows TOLERANCE, far below the smallest real distance
between two different means of a few thousand scores. Works on numbers, numpy arrays and
pandas Series alike (NaN is neither adjacent nor major). Pure: no Django.
"""

from __future__ import annotations

ADJACENT_POINTS = 1
MAJOR_POINTS = 2
TOLERANCE = 1e-9


def is_adjacent(gap):
    """Within one point: |gap| <= 1."""
    return abs(gap) <= ADJACENT_POINTS + TOLERANCE


def is_major(gap):
    """A major disagreement: |gap| >= 2."""
    return at_least(abs(gap), MAJOR_POINTS)


def at_least(value, threshold):
    """value >= threshold, for values computed from means (a mean difference reaching +0.5,
    a gap reaching a chosen minimum)."""
    return value >= threshold - TOLERANCE
