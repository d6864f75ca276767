"""The coefficients reproduce published values.

- Krippendorff's alpha: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
  section C: 4 observers x 12 units with missing values; alpha = 0.743 (nominal), 0.815
  (ordinal), 0.849 (interval). The matrix is the one in the docstring of the `krippendorff`
  package (github.com/pln-fing-udelar/fast-krippendorff, krippendorff/krippendorff.py).
- Gwet's AC1/AC2: Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed., the 4 raters x
  12 subjects x 5 categories dataset with missing ratings (irrCAC `raw_4raters`); irrCAC's
  tests (github.com/afergadis/irrCAC, test/unit/irrCAC/raw/test_gwet.py) give AC1: pa 0.818,
  pe 0.190, coefficient 0.775; quadratic weights: pa 0.975, pe 0.714, coefficient 0.914.
  Also `raw_g1g2` (AC1 0.685, pa 0.744, pe 0.187).
- ICC: Shrout & Fleiss (1979), Table 2 (6 targets x 4 judges), ICC(2,1) = 0.29.
"""

import numpy as np
import pandas as pd
import pytest

from alignment.engine import coefficients
from alignment.engine.agreement import rubric_agreement

NAN = np.nan
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])  # fmt: skip
KRIPPENDORFF_PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}
LEVELS = np.arange(1, 6)

# Gwet (2014) / irrCAC raw_4raters: rows are subjects, columns raters 1-4.
GWET_4RATERS = np.array([
    [1, 1, NAN, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [NAN, 5, 5, 5], [NAN, NAN, 1, 1], [NAN, NAN, 3, NAN],
])  # fmt: skip
# irrCAC raw_g1g2 as counts per category a-e (dist_g1g2 is the same data summarised).
GWET_G1G2_COUNTS = np.array([
    [3, 0, 0, 0, 0], [0, 3, 1, 0, 0], [0, 0, 4, 0, 0], [0, 0, 4, 0, 0], [0, 4, 0, 0, 0],
    [1, 1, 1, 1, 0], [0, 0, 0, 4, 0], [3, 1, 0, 0, 0], [0, 4, 0, 0, 0], [0, 0, 0, 0, 3],
    [2, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 3, 1, 0, 0], [1, 2, 1, 0, 0],
])  # fmt: skip

SHROUT_FLEISS_TABLE_2 = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
)


def _level_counts(matrix: np.ndarray, axis: int) -> np.ndarray:
    return np.stack([(matrix == level).sum(axis=axis) for level in LEVELS], axis=1)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_from_coincidence_sums_matches_krippendorff_2011(level):
    counts = _level_counts(KRIPPENDORFF_2011, axis=0)
    sums = coefficients.coincidence_columns(counts).sum(axis=0)
    value = coefficients.alpha_from_sums(sums, level=level, values=LEVELS)[0]
    assert round(value, 3) == KRIPPENDORFF_PUBLISHED[level]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_the_krippendorff_package_gives_the_published_values_too(level):
    value = coefficients.library_alpha(KRIPPENDORFF_2011, level=level, values=LEVELS)
    assert round(value, 3) == KRIPPENDORFF_PUBLISHED[level]


def test_rubric_agreement_reports_the_published_ordinal_alpha():
    rows = [
        (unit, f"coder {coder}", int(score))
        for coder, scores in enumerate(KRIPPENDORFF_2011)
        for unit, score in enumerate(scores)
        if not np.isnan(score)
    ]
    frame = pd.DataFrame(rows, columns=["item", "rater", "score"])
    result = rubric_agreement(frame, None, resamples=0)
    assert round(result.alpha_clinicians.value, 3) == 0.815
    # Unit 12 has a single value: not pairable, so 11 units and 40 of the 41 values enter.
    assert (result.alpha_clinicians.n_items, result.alpha_clinicians.n_ratings) == (11, 40)


@pytest.mark.parametrize(
    ("weights", "pa", "pe", "coefficient"),
    [
        (np.eye(5), 0.818, 0.190, 0.775),
        (coefficients.quadratic_weights(5), 0.975, 0.714, 0.914),
    ],
    ids=["AC1", "AC2 quadratic"],
)
def test_gwet_matches_the_handbook_example_with_missing_ratings(weights, pa, pe, coefficient):
    counts = _level_counts(GWET_4RATERS, axis=1)
    sums = coefficients.gwet_columns(counts, weights).sum(axis=0)
    got = [round(float(part[0]), 3) for part in coefficients.gwet_from_sums(sums, weights)]
    assert got == [pa, pe, coefficient]


def test_gwet_ac1_matches_irrcac_g1g2_example():
    weights = np.eye(5)
    sums = coefficients.gwet_columns(GWET_G1G2_COUNTS, weights).sum(axis=0)
    got = [round(float(part[0]), 3) for part in coefficients.gwet_from_sums(sums, weights)]
    assert got == [0.744, 0.187, 0.685]


def test_rubric_agreement_reports_the_handbook_ac2():
    rows = [
        (subject, f"rater {rater}", int(score))
        for subject, scores in enumerate(GWET_4RATERS)
        for rater, score in enumerate(scores)
        if not np.isnan(score)
    ]
    result = rubric_agreement(pd.DataFrame(rows, columns=["item", "rater", "score"]), None,
                              resamples=0)  # fmt: skip
    assert round(result.ac2.value, 3) == 0.914


def test_icc_a1_matches_shrout_and_fleiss_table_2():
    sums = coefficients.icc_columns(SHROUT_FLEISS_TABLE_2).sum(axis=0)
    value = coefficients.icc_from_sums(sums)[0]
    assert round(value, 2) == 0.29
    assert value == pytest.approx(0.2898, abs=1e-4)


def test_icc_is_one_for_identical_raters_and_penalises_a_constant_offset():
    scores = np.array([1.0, 2, 3, 4, 5])
    same = coefficients.icc_from_sums(
        coefficients.icc_columns(np.column_stack([scores, scores])).sum(0)
    )
    shifted = coefficients.icc_from_sums(
        coefficients.icc_columns(np.column_stack([scores, scores + 1])).sum(0)
    )
    assert same[0] == pytest.approx(1.0)
    # Absolute agreement: an offset of 1 lowers it below consistency's 1.0.
    assert shifted[0] < 0.9
