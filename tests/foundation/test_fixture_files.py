"""Example files shipped in fixtures/ stay valid as the formats evolve."""

from pathlib import Path

import pytest

from benchmark.engine.distribution import load_distribution

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "distributions").glob("*.yaml")), ids=lambda p: p.name
)
def test_every_example_distribution_loads(path):
    distribution = load_distribution(path)
    assert distribution.fingerprint


def test_the_high_priority_example_oversamples_emergencies():
    shares = load_distribution(FIXTURES / "distributions" / "high_priority.yaml")
    default = load_distribution(
        Path(__file__).resolve().parents[2] / "benchmark/data/distributions/default.yaml"
    )
    category = "health_concern"
    assert (
        shares.subcategory_probabilities(category)["emergency_symptoms"]
        > 1.5 * default.subcategory_probabilities(category)["emergency_symptoms"]
    )
