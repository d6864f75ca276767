"""The clustered bootstrap of the pooled sensitivity figures, against a computation written
from its definition: draw references with replacement, take every pair of each reference
drawn, compute the measure on the pairs so drawn, take the 2.5th and 97.5th percentiles."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from rubric_lab.engine import sensitivity

# Six references, each perturbed in one to four ways: one cluster of pairs per reference.
CLUSTERS = ["a", "a", "a", "b", "b", "c", "d", "d", "d", "d", "e", "f", "f"]
REFERENCE = np.array([5, 5, 5, 3, 3, 4, 2, 2, 2, 2, 4.5, 4, 4], dtype=float)
PERTURBED = np.array([3, 5, 4, 3, 1, 4.5, 2, 1, 3, 2, 2, 4, 3], dtype=float)
RESAMPLES = 400
SEED = 11


def by_definition(statistic) -> tuple[float, float]:
    """The percentile interval of `statistic` over resamples of whole references."""
    order = list(dict.fromkeys(CLUSTERS))
    members = {label: [i for i, c in enumerate(CLUSTERS) if c == label] for label in order}
    rng = np.random.default_rng(SEED)
    draws = rng.integers(0, len(order), (RESAMPLES, len(order)))
    values = []
    for row in draws:
        pairs = [i for number in row for i in members[order[number]]]
        values.append(statistic(REFERENCE[pairs], PERTURBED[pairs]))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def auroc(reference, perturbed) -> float:
    labels = np.r_[np.ones(len(reference)), np.zeros(len(perturbed))]
    return roc_auc_score(labels, np.r_[reference, perturbed])


@pytest.mark.parametrize(
    ("measure", "statistic"),
    [
        ("win_rate", lambda r, p: np.mean(r > p)),
        ("tie_rate", lambda r, p: np.mean(r == p)),
        ("mean_delta", lambda r, p: np.mean(r - p)),
        ("auroc", auroc),
    ],
)
def test_the_clustered_intervals_equal_the_computation_from_the_definition(measure, statistic):
    result = sensitivity.sensitivity(
        REFERENCE, PERTURBED, clusters=CLUSTERS, resamples=RESAMPLES, seed=SEED
    )

    estimate = getattr(result, measure)
    assert (estimate.low, estimate.high) == pytest.approx(by_definition(statistic), abs=1e-12)
    assert estimate.value == pytest.approx(statistic(REFERENCE, PERTURBED))


def test_the_clustered_bootstrap_reports_how_many_references_it_resampled():
    result = sensitivity.sensitivity(REFERENCE, PERTURBED, clusters=CLUSTERS)

    assert (result.n, result.clusters) == (13, 6)
    assert result.as_row()["references"] == 6


def test_pairs_that_copy_one_reference_do_not_narrow_the_clustered_interval():
    # Every reference perturbed five ways with the same outcome: five copies of one case.
    reference = np.repeat([5.0, 4.0, 3.0, 4.0, 2.0, 5.0], 5)
    perturbed = np.repeat([3.0, 4.0, 3.5, 2.0, 2.0, 4.0], 5)
    clusters = np.repeat(list("abcdef"), 5).tolist()

    by_pair = sensitivity.sensitivity(reference, perturbed, seed=2)
    by_reference = sensitivity.sensitivity(reference, perturbed, clusters=clusters, seed=2)
    once = sensitivity.sensitivity(reference[::5], perturbed[::5], seed=2)

    def width(result):
        return result.mean_delta.high - result.mean_delta.low

    assert width(by_pair) < 0.6 * width(by_reference)
    # Resampling references, five copies of each carry as much uncertainty as one copy.
    assert width(by_reference) == pytest.approx(width(once), rel=0.25)


def test_clusters_must_name_one_cluster_per_pair():
    with pytest.raises(ValueError, match="one cluster per pair"):
        sensitivity.sensitivity(REFERENCE, PERTURBED, clusters=CLUSTERS[:-1])
