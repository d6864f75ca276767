"""Eligibility rules: plausible patients by design, and a small share broken on purpose."""

from collections import Counter

import pytest

from benchmark.engine.distribution import DEFAULT_DISTRIBUTION_PATH, parse_distribution
from benchmark.engine.distribution_report import realised_shares
from benchmark.engine.eligibility import Rule
from benchmark.engine.sampler import sample_seeds

DEFAULT_YAML = DEFAULT_DISTRIBUTION_PATH.read_text(encoding="utf-8")

# A small file whose rules are easy to reason about: one male-only condition that may be
# broken by sex, one pediatric-only condition, one open condition.
SMALL = """\
name: small
version: 1
attributes:
  condition:
    Benign prostatic hyperplasia: 1
    Croup: 1
    Asthma: 2
  severity: {mild: 1}
  task_category: {health_concern: 1}
  task_subcategory:
    health_concern: {symptom_assessment: 1}
  age_group: {pediatric: 1, adult: 3}
  sex: {female: 1, male: 1}
  gender: {woman: 1, man: 1}
  care_preference: {remote: 1}
  personality: {cooperative: 1}
age_ranges:
  pediatric: [2, 17]
  adult: [18, 85]
gender_identity:
  female: {woman: cis_female, man: trans_male}
  male: {man: cis_male, woman: trans_female}
eligibility:
  Benign prostatic hyperplasia: {sex: [male], ages: [40, 85], breakable: [sex]}
  Croup: {age_groups: [pediatric], ages: [2, 6]}
  Asthma: {}
infeasible_share: 0.1
"""


@pytest.fixture
def small():
    return parse_distribution(SMALL)


def broken_by_design(seeds):
    return [seed for seed in seeds if seed["broken_rule"]]


def configured_and_expected(distribution):
    return [
        (attribute, value, target, expected)
        for (attribute, value, target), (_, _, expected) in zip(
            distribution.target_shares(), distribution.expected_shares(), strict=True
        )
    ]


def test_every_default_condition_has_an_eligibility_rule(distribution):
    rules = {rule.condition: rule for rule in distribution.rules}
    assert list(rules) == list(distribution.probabilities("condition"))
    assert rules["Benign prostatic hyperplasia"].sexes == ("male",)
    assert rules["Prostate cancer on hormone therapy"].sexes == ("male",)
    for condition in (
        "Pregnancy with gestational diabetes",
        "Postmenopausal osteoporosis",
        "Menopause symptoms on hormone therapy",
        "Polycystic ovary syndrome",
        "Endometriosis with chronic pelvic pain",
    ):
        assert rules[condition].sexes == ("female",), condition
    assert not rules["Alzheimer's dementia"].allowed_years("pediatric", 2, 17)
    assert distribution.infeasible_share == 0.02


def test_the_default_rules_rule_out_the_contradictions_the_demo_set_used_to_have(distribution):
    assert distribution.broken_rules(
        {"condition": "Postmenopausal osteoporosis", "sex": "male", "age_group": "young_adult",
         "age": 24}
    ) == ["sex", "age"]  # fmt: skip
    for sex, gender in (("female", "woman"), ("female", "man")):
        seed = {"condition": "Benign prostatic hyperplasia", "sex": sex, "gender": gender,
                "age_group": "senior", "age": 70}  # fmt: skip
        assert distribution.broken_rules(seed) == ["sex"]


def test_seeds_not_marked_infeasible_break_no_rule(distribution):
    seeds = sample_seeds(distribution, 20_000, 41)
    for seed in seeds:
        if not seed["broken_rule"]:
            assert distribution.broken_rules(seed) == [], seed


def test_about_two_percent_of_seeds_break_exactly_the_one_rule_they_record(distribution):
    seeds = sample_seeds(distribution, 20_000, 42)
    infeasible = broken_by_design(seeds)
    assert 0.015 <= len(infeasible) / len(seeds) <= 0.025
    for seed in infeasible:
        kind = seed["broken_rule"]["rule"]
        assert distribution.broken_rules(seed) == [kind]
        assert kind in distribution.rule(seed["condition"]).breakable
        assert seed["condition"] in seed["broken_rule"]["text"]
    assert {seed["broken_rule"]["rule"] for seed in infeasible} == {"sex", "age"}


def test_an_age_rule_is_broken_only_into_age_groups_it_excludes_entirely(distribution):
    for seed in broken_by_design(sample_seeds(distribution, 20_000, 43)):
        if seed["broken_rule"]["rule"] == "age":
            rule = distribution.rule(seed["condition"])
            assert not rule.allowed_years(seed["age_group"], *seed["age_range"]), seed


def test_the_broken_rule_reads_as_a_sentence(small):
    seed = broken_by_design(sample_seeds(small, 200, 1))[0]
    assert seed["broken_rule"] == {
        "rule": "sex",
        "text": "Benign prostatic hyperplasia needs male sex at birth; this patient was born "
        "female.",
    }


def test_ages_stay_inside_the_years_a_rule_allows(small):
    seeds = sample_seeds(small, 3_000, 2)
    croup = [seed["age"] for seed in seeds if seed["condition"] == "Croup"]
    assert min(croup) == 2 and max(croup) == 6
    prostate = [
        s["age"] for s in seeds if s["condition"].startswith("Benign") and s["sex"] == "male"
    ]
    assert min(prostate) == 40


def test_a_pediatric_only_condition_is_only_drawn_for_children(small):
    seeds = sample_seeds(small, 3_000, 3)
    assert {seed["age_group"] for seed in seeds if seed["condition"] == "Croup"} == {"pediatric"}


def test_the_fit_keeps_the_configured_condition_age_and_sex_shares(distribution):
    for attribute, value, target, expected in configured_and_expected(distribution):
        if attribute in ("condition", "age_group", "sex", "gender_identity"):
            assert expected == pytest.approx(target, abs=1e-9), (attribute, value)


def test_the_sample_meets_those_shares_too(small):
    report = realised_shares(sample_seeds(small, 20_000, 4), small).set_index(
        ["attribute", "value"]
    )
    assert report.loc[("age_group", "pediatric"), "realised_share"] == pytest.approx(0.25, abs=0.01)
    assert report.loc[("sex", "male"), "realised_share"] == pytest.approx(0.5, abs=0.01)
    assert report.loc[("condition", "Croup"), "realised_share"] == pytest.approx(0.25, abs=0.01)
    assert report.loc[("eligibility", "breaks the sex rule"), "realised_share"] == pytest.approx(
        0.1, abs=0.01
    )


def test_when_the_rules_put_a_share_out_of_reach_the_report_shows_the_effect():
    # Only Croup, a quarter of the conditions, can be pediatric: 60% children is out of reach.
    text = SMALL.replace(
        "age_group: {pediatric: 1, adult: 3}", "age_group: {pediatric: 6, adult: 4}"
    )
    mix = parse_distribution(text.replace("Asthma: {}", "Asthma: {age_groups: [adult]}"))
    report = realised_shares([], mix).set_index(["attribute", "value"])
    pediatric = report.loc[("age_group", "pediatric")]
    assert pediatric["target_share"] == pytest.approx(0.6)
    assert pediatric["expected_share"] == pytest.approx(0.25)  # every Croup patient
    assert report.loc[("condition", "Croup"), "eligibility_effect"] == pytest.approx(0, abs=1e-9)
    assert pediatric["eligibility_effect"] == pytest.approx(
        pediatric["expected_share"] - pediatric["target_share"]
    )
    realised = realised_shares(sample_seeds(mix, 5_000, 8), mix).set_index(["attribute", "value"])
    assert realised.loc[("age_group", "pediatric"), "realised_share"] == pytest.approx(
        pediatric["expected_share"], abs=0.02
    )


def test_the_infeasible_share_is_configurable_and_zero_draws_none():
    text = DEFAULT_YAML.replace("infeasible_share: 0.02", "infeasible_share: 0")
    mix = parse_distribution(text)
    assert broken_by_design(sample_seeds(mix, 5_000, 5)) == []
    boosted = parse_distribution(
        DEFAULT_YAML.replace("infeasible_share: 0.02", "infeasible_share: 0.2")
    )
    assert 0.17 < len(broken_by_design(sample_seeds(boosted, 5_000, 5))) / 5_000 < 0.23


def test_a_file_without_eligibility_rules_draws_no_infeasible_seeds():
    text = DEFAULT_YAML[: DEFAULT_YAML.index("\n# Who can plausibly")] + "\n"
    mix = parse_distribution(text)
    assert mix.rules == () and mix.infeasible_share == 0
    assert broken_by_design(sample_seeds(mix, 2_000, 6)) == []


def test_a_rule_lists_what_it_breaks():
    rule = Rule("Croup", age_groups=("pediatric",), ages=(2, 6))
    assert rule.broken("male", "pediatric", 4) == []
    assert rule.broken("male", "pediatric", 9) == ["age"]
    assert rule.broken("male", "adult", 40) == ["age"]
    assert rule.explain("age", "male", "adult", 40) == (
        "Croup needs age group pediatric and age 2-6; this patient is 40 (adult)."
    )


def test_the_plan_is_computed_once_per_distribution(distribution):
    assert distribution.plan is distribution.plan


def test_only_breakable_rules_are_broken_and_the_other_rules_still_hold(small):
    # Only the sex rule of the prostate condition can be broken, so every infeasible seed is
    # a woman with it, at the ages the rule allows.
    infeasible = broken_by_design(sample_seeds(small, 5_000, 7))
    assert Counter((seed["condition"], seed["sex"]) for seed in infeasible) == {
        ("Benign prostatic hyperplasia", "female"): len(infeasible)
    }
    assert min(seed["age"] for seed in infeasible) >= 40
