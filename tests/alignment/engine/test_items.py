"""One rubric's table as arrays, and its columns summed under every resample.

The single-precision product is only taken where it is exact (whole numbers whose weighted sums
stay under 2**24), so those sums equal the double-precision product to the last bit; the other
columns stay in double precision. The wide table placed by codes equals pandas' pivot."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.design import sample_batch
from alignment.engine.frames import ITEM, RATER, SCORE
from alignment.engine.items import SINGLE_EXACT, ItemColumns, rubric_items, whole_rows


def _columns(blocks: dict[str, np.ndarray]) -> ItemColumns:
    columns = ItemColumns(len(next(iter(blocks.values()))))
    for name, block in blocks.items():
        columns.add(name, block)
    return columns


def _both_ways(blocks: dict[str, np.ndarray], weights: np.ndarray):
    whole = whole_rows(weights)
    assert whole is not None
    return _columns(blocks).sums(weights, whole=whole), _columns(blocks).sums(weights)


def test_whole_number_and_fractional_columns_sum_exactly_as_in_double_precision():
    rng = np.random.default_rng(7)
    n = 1_500
    blocks = {
        "counts": rng.integers(0, 6, size=(n, 20)).astype(float),
        "indicators": (rng.random((n, 5)) < 0.3).astype(float),
        "signed": rng.integers(-16, 17, size=n).astype(float),
        "jury means": rng.integers(3, 16, size=(n, 3)) / 3,  # thirds: not whole numbers
        "squares": (rng.integers(3, 16, size=n) / 3) ** 2,
    }
    batch = sample_batch(n, 300, seed=3)
    mixed, double = _both_ways(blocks, batch.matrix)
    for name in ("counts", "indicators", "signed"):  # single precision, to the last bit
        assert np.array_equal(mixed[name], double[name]), name
    for name in ("jury means", "squares"):  # double precision, in a product of their own
        assert np.allclose(mixed[name], double[name], rtol=1e-13, atol=0), name


def test_whole_numbers_too_large_for_single_precision_take_the_double_product():
    rng = np.random.default_rng(11)
    n = 400
    large = np.full(n, 2**22 + 1.0)  # odd: single precision cannot hold 2**22 + 1 times 3
    weights = rng.integers(0, 4, size=(50, n)).astype(float)
    mixed, double = _both_ways({"large": large, "small": np.ones(n)}, weights)
    assert np.array_equal(mixed["large"], double["large"])
    assert np.array_equal(mixed["small"], double["small"])
    # What the bound prevents: the same column through the single-precision product is wrong.
    single = weights.astype(np.float32) @ large[:, None].astype(np.float32)
    assert not np.array_equal(single.astype(float), double["large"])


@pytest.mark.parametrize(
    "weights",
    [
        np.array([[1.0, 0.5], [2.0, 1.0]]),  # population weights: not whole numbers
        np.array([[1.0, float(SINGLE_EXACT)]]),  # a whole number single precision cannot hold
    ],
)
def test_rows_that_are_not_small_whole_numbers_have_no_single_precision_copy(weights):
    assert whole_rows(weights) is None


def test_the_plain_bootstraps_batch_carries_its_rows_in_single_precision():
    batch = sample_batch(200, 100, seed=0)
    assert batch.whole is not None
    assert np.array_equal(batch.whole.single.astype(float), batch.matrix)
    assert batch.whole.largest == batch.matrix.max()


def test_the_wide_table_equals_pandas_pivot_with_text_raters_and_gaps():
    rng = np.random.default_rng(5)
    raters = ["nurse-b", "gp-a", "gp-c", "nurse-a"]
    rows = [
        (item, rater, int(rng.integers(1, 6)))
        for item in rng.permutation(np.arange(100, 160))
        for rater in raters
        if rng.random() < 0.6
    ]
    clinicians = pd.DataFrame(rows, columns=[ITEM, RATER, SCORE])
    jury = pd.Series(rng.integers(3, 16, size=70) / 3, index=np.arange(95, 165))
    data = rubric_items(clinicians, jury)
    wide = clinicians.pivot(index=ITEM, columns=RATER, values=SCORE).astype(float)
    assert np.array_equal(data.items, wide.index.to_numpy())
    assert data.raters == list(wide.columns) == sorted(set(clinicians[RATER]))
    assert np.array_equal(data.scores, wide.to_numpy(), equal_nan=True)
    assert np.array_equal(data.jury, jury.reindex(wide.index).to_numpy(), equal_nan=True)
    assert data.n_jury_items_unrated == len(set(jury.index) - set(clinicians[ITEM]))
