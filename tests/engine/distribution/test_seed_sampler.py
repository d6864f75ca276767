import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.engine.distribution import DEFAULT_DISTRIBUTION_PATH, parse_distribution
from benchmark.engine.distribution_report import REPORT_ATTRIBUTES, realised_shares
from benchmark.engine.sampler import sample_seeds

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONTRACT_KEYS = {
    "condition", "severity", "task_category", "task_subcategory", "age_group", "sex", "gender",
    "gender_identity", "care_preference", "personality",
}  # fmt: skip


def test_realised_shares_over_20000_seeds_stay_within_1_5_points_of_every_weight(distribution):
    # Eligibility holds the configured shares: condition, age group and sex included.
    report = realised_shares(sample_seeds(distribution, 20_000, 2024), distribution)
    worst = report.loc[report["difference"].abs().idxmax()]
    assert abs(worst["difference"]) <= 0.015, worst.to_dict()
    assert set(report["attribute"]) == CONTRACT_KEYS | {"eligibility"} == set(REPORT_ATTRIBUTES)


def test_the_same_integer_seed_gives_the_same_seeds_in_another_process(distribution):
    script = (
        "import json\n"
        "from benchmark.engine.distribution import default_distribution\n"
        "from benchmark.engine.sampler import sample_seeds\n"
        "print(json.dumps(sample_seeds(default_distribution(), 300, 987654321)))\n"
    )
    # A different hash salt in the child proves nothing depends on Python's hash().
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(PROJECT_ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert json.loads(child.stdout) == sample_seeds(distribution, 300, 987654321)


def test_different_integer_seeds_give_different_samples(distribution):
    assert sample_seeds(distribution, 50, 1) != sample_seeds(distribution, 50, 2)


def test_a_larger_sample_starts_with_the_smaller_one(distribution):
    assert sample_seeds(distribution, 500, 7)[:40] == sample_seeds(distribution, 40, 7)


def test_every_seed_has_the_contract_keys_plus_index_age_age_range_and_broken_rule(distribution):
    seeds = sample_seeds(distribution, 30, 3)
    assert [seed["index"] for seed in seeds] == list(range(30))
    for seed in seeds:
        assert set(seed) == CONTRACT_KEYS | {"index", "age", "age_range", "broken_rule"}


def test_ages_fall_inside_their_age_group(distribution):
    for seed in sample_seeds(distribution, 2_000, 11):
        youngest, oldest = distribution.age_range(seed["age_group"])
        assert youngest <= seed["age"] <= oldest
        assert seed["age_range"] == [youngest, oldest]


def test_ages_reach_both_ends_of_each_group(distribution):
    seeds = sample_seeds(distribution, 5_000, 12)
    ages = {seed["age"] for seed in seeds if seed["age_group"] == "pediatric"}
    assert min(ages) == 2 and max(ages) == 17


def test_subcategories_belong_to_the_drawn_category(distribution):
    for seed in sample_seeds(distribution, 2_000, 13):
        assert seed["task_subcategory"] in distribution.subcategory_probabilities(
            seed["task_category"]
        )


def test_gender_identity_is_derived_from_sex_and_gender(distribution):
    for seed in sample_seeds(distribution, 500, 14):
        expected = distribution.gender_identity(seed["sex"], seed["gender"])
        assert seed["gender_identity"] == expected


def test_it_leaves_the_global_random_generator_alone(distribution):
    random.seed(99)
    before = random.getstate()
    sample_seeds(distribution, 100, 5)
    assert random.getstate() == before


def test_raising_a_weight_oversamples_that_value():
    text = DEFAULT_DISTRIBUTION_PATH.read_text(encoding="utf-8")
    boosted = parse_distribution(text.replace("emergency_symptoms: 18", "emergency_symptoms: 500"))
    share = (
        sum(
            seed["task_subcategory"] == "emergency_symptoms"
            for seed in sample_seeds(boosted, 5_000, 21)
        )
        / 5_000
    )
    assert share > 0.4


@pytest.mark.parametrize("bad_seed", ["42", 4.2, True, None])
def test_it_refuses_a_seed_that_is_not_an_integer(distribution, bad_seed):
    with pytest.raises(TypeError):
        sample_seeds(distribution, 5, bad_seed)


def test_it_refuses_a_negative_count(distribution):
    with pytest.raises(ValueError):
        sample_seeds(distribution, -1, 5)


def test_zero_seeds_is_an_empty_list(distribution):
    assert sample_seeds(distribution, 0, 5) == []
