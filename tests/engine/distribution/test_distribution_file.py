import dataclasses
import json

import pytest

from benchmark.engine.distribution import (
    SEED_ATTRIBUTES,
    DistributionError,
    load_distribution,
    parse_distribution,
)

TINY = """\
name: tiny
version: 1
attributes:
  condition:
    Asthma: 2
    GERD: 1
  severity: {mild: 1, moderate: 1, severe: 2}
  task_category:
    health_concern: 3
    medication: 1
  task_subcategory:
    health_concern: {symptom_assessment: 1}
    medication: {refill: 1, new_prescription: 1}
  age_group: {pediatric: 1, senior: 1}
  sex: {female: 1, male: 1}
  gender: {woman: 1, man: 1}
  care_preference: {remote: 1}
  personality: {cooperative: 1}
age_ranges:
  pediatric: [2, 17]
  senior: [65, 85]
gender_identity:
  female: {woman: cis_female, man: trans_male}
  male: {man: cis_male, woman: trans_female}
"""


def line_of(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


def problems_of(text: str) -> list:
    with pytest.raises(DistributionError) as caught:
        parse_distribution(text, source="test.yaml")
    return caught.value.problems


def test_the_tiny_file_is_valid():
    assert parse_distribution(TINY).name == "tiny"


def test_the_default_file_has_79_distinct_conditions(distribution):
    assert len(distribution.probabilities("condition")) == 79


def test_default_condition_weights_stay_between_0_7_and_2_2_percent(distribution):
    shares = distribution.probabilities("condition").values()
    assert all(0.007 <= share <= 0.022 + 1e-9 for share in shares)


def test_default_weights_follow_the_source_mix(distribution):
    assert distribution.probabilities("severity") == pytest.approx(
        {"mild": 0.25, "moderate": 0.45, "severe": 0.30}
    )
    assert distribution.probabilities("personality")["cooperative"] == pytest.approx(0.53)
    assert distribution.probabilities("care_preference")["in_person"] == pytest.approx(0.26)
    categories = distribution.probabilities("task_category")
    assert categories["health_concern"] == pytest.approx(0.56)
    assert categories["care_coordination"] == pytest.approx(0.03)
    assert distribution.age_range("pediatric") == (2, 17)
    assert distribution.age_range("senior") == (65, 85)


def test_every_weight_table_is_normalised_to_probabilities(distribution):
    for attribute, table in distribution.weights + distribution.subcategories:
        assert sum(probability for _, probability in table) == pytest.approx(1.0), attribute


def test_target_shares_cover_every_seed_attribute_and_sum_to_one(distribution):
    totals = dict.fromkeys(SEED_ATTRIBUTES, 0.0)
    for attribute, _, share in distribution.target_shares():
        totals[attribute] += share
    assert totals == pytest.approx(dict.fromkeys(SEED_ATTRIBUTES, 1.0))


def test_it_rejects_an_unknown_attribute_naming_its_line():
    text = TINY.replace("  personality:", "  ethnicity: {a: 1}\n  personality:")
    [problem] = problems_of(text)
    assert problem.path == "attributes.ethnicity"
    assert problem.line == line_of(text, "ethnicity")
    assert "unknown attribute" in problem.message


def test_it_rejects_a_missing_attribute():
    text = TINY.replace("  severity: {mild: 1, moderate: 1, severe: 2}\n", "")
    [problem] = problems_of(text)
    assert problem.path == "attributes.severity"
    assert "missing attribute 'severity'" in problem.message


def test_it_rejects_a_negative_weight_naming_its_line():
    text = TINY.replace("GERD: 1", "GERD: -3")
    [problem] = problems_of(text)
    assert (problem.path, problem.line) == ("attributes.condition.GERD", line_of(text, "GERD"))
    assert "negative" in problem.message


def test_it_rejects_weights_that_are_all_zero():
    text = TINY.replace("Asthma: 2", "Asthma: 0").replace("GERD: 1", "GERD: 0")
    [problem] = problems_of(text)
    assert problem.path == "attributes.condition"
    assert "all weights are zero" in problem.message


@pytest.mark.parametrize("weight", ["25%", "high", "true", "[1, 2]", ".nan"])
def test_it_rejects_weights_that_are_not_numbers(weight):
    text = TINY.replace("Asthma: 2", f"Asthma: {weight}")
    [problem] = problems_of(text)
    assert problem.path == "attributes.condition.Asthma"
    assert problem.line == line_of(text, "Asthma")
    assert "must be a number" in problem.message


def test_it_reports_a_yaml_syntax_error_with_its_line():
    text = TINY.replace("GERD: 1", "GERD: [1")
    [problem] = problems_of(text)
    assert "invalid YAML" in problem.message
    assert problem.line is not None and problem.line > line_of(text, "Asthma")


def test_it_rejects_an_empty_value_list():
    [problem] = problems_of(TINY.replace("care_preference: {remote: 1}", "care_preference: {}"))
    assert problem.path == "attributes.care_preference"
    assert "non-empty" in problem.message


def test_it_rejects_subcategories_of_an_unknown_category():
    text = TINY.replace(
        "    medication: {refill", "    billing: {invoice: 1}\n    medication: {refill"
    )
    [problem] = problems_of(text)
    assert problem.path == "attributes.task_subcategory.billing"
    assert problem.line == line_of(text, "billing")
    assert "unknown task category" in problem.message


def test_it_rejects_a_category_without_subcategories():
    [problem] = problems_of(TINY.replace("    medication: {refill: 1, new_prescription: 1}\n", ""))
    assert "'medication' has no subcategories" in problem.message


def test_it_rejects_a_subcategory_name_used_in_two_categories():
    [problem] = problems_of(TINY.replace("new_prescription", "symptom_assessment"))
    assert "used twice" in problem.message


def test_it_rejects_a_duplicate_key():
    text = TINY.replace("GERD: 1", "GERD: 1\n    GERD: 4")
    [problem] = problems_of(text)
    assert problem.message == "duplicate key"
    assert problem.line == line_of(text, "GERD: 4")


def test_it_rejects_an_age_group_without_a_valid_range():
    [problem] = problems_of(TINY.replace("senior: [65, 85]", "senior: [85, 65]"))
    assert problem.path == "age_ranges.senior"


def test_it_rejects_a_gender_identity_table_with_a_gap():
    [problem] = problems_of(TINY.replace(", woman: trans_female", ""))
    assert problem.path == "gender_identity.male.woman"


def test_it_reports_every_problem_at_once_in_the_message():
    text = TINY.replace("GERD: 1", "GERD: -1").replace("remote: 1", "remote: lots")
    with pytest.raises(DistributionError) as caught:
        parse_distribution(text, source="mine.yaml")
    message = str(caught.value)
    assert len(caught.value.problems) == 2
    assert "mine.yaml" in message
    assert f"line {line_of(text, 'GERD')}, attributes.condition.GERD" in message
    assert f"line {line_of(text, 'remote')}, attributes.care_preference.remote" in message


def test_the_error_is_a_value_error():
    assert issubclass(DistributionError, ValueError)


def test_json_text_is_accepted(distribution):
    as_json = json.dumps(distribution.to_dict())
    assert parse_distribution(as_json).fingerprint == distribution.fingerprint


def test_to_yaml_round_trips_with_the_same_fingerprint(distribution):
    again = parse_distribution(distribution.to_yaml())
    assert again.fingerprint == distribution.fingerprint
    assert again.probabilities("condition") == pytest.approx(
        distribution.probabilities("condition")
    )


def test_the_fingerprint_ignores_the_scale_of_the_weights():
    doubled = TINY.replace("Asthma: 2", "Asthma: 4").replace("GERD: 1", "GERD: 2")
    assert parse_distribution(doubled).fingerprint == parse_distribution(TINY).fingerprint


def test_the_fingerprint_changes_when_a_weight_changes():
    changed = TINY.replace("Asthma: 2", "Asthma: 3")
    assert parse_distribution(changed).fingerprint != parse_distribution(TINY).fingerprint


def test_a_distribution_is_frozen(distribution):
    with pytest.raises(dataclasses.FrozenInstanceError):
        distribution.name = "other"


def test_it_loads_from_a_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(TINY, encoding="utf-8")
    assert load_distribution(path).fingerprint == parse_distribution(TINY).fingerprint


# --- eligibility rules and the infeasible share ---------------------------------------------

RULES = """\
eligibility:
  Asthma: {}
  GERD: {sex: [female], age_groups: [senior], ages: [65, 80], breakable: [sex, age]}
"""


def test_a_file_without_eligibility_has_no_rules_and_no_infeasible_share():
    distribution = parse_distribution(TINY)
    assert distribution.rules == () and distribution.infeasible_share == 0
    assert "eligibility" not in distribution.to_dict()


def test_rules_are_read_and_the_infeasible_share_defaults_to_two_percent():
    distribution = parse_distribution(TINY + RULES)
    assert distribution.rule("GERD").sexes == ("female",)
    assert distribution.rule("GERD").ages == (65, 80)
    assert distribution.rule("GERD").breakable == ("sex", "age")
    assert distribution.rule("Asthma").kinds == ()
    assert distribution.infeasible_share == 0.02


def test_rules_round_trip_and_change_the_fingerprint():
    distribution = parse_distribution(TINY + RULES)
    assert parse_distribution(distribution.to_yaml()).rules == distribution.rules
    looser = parse_distribution(TINY + RULES.replace("ages: [65, 80]", "ages: [60, 80]"))
    assert looser.fingerprint != distribution.fingerprint
    other_share = parse_distribution(TINY + RULES + "infeasible_share: 0.05\n")
    assert other_share.fingerprint != distribution.fingerprint


@pytest.mark.parametrize(
    ("old", "new", "path", "message"),
    [
        ("GERD: {", "Scurvy: {}\n  GERD: {", "eligibility.Scurvy", "unknown condition 'Scurvy'"),
        ("sex: [female]", "sex: [female, other]", "eligibility.GERD.sex", "'other'; known: female"),
        ("sex: [female]", "sex: female", "eligibility.GERD.sex", "non-empty list"),
        ("age_groups: [senior]", "age_groups: [elderly]", "eligibility.GERD.age_groups",
         "unknown value(s) 'elderly'"),
        ("ages: [65, 80]", "ages: [80, 65]", "eligibility.GERD.ages", "[youngest, oldest]"),
        ("ages: [65, 80]", "ages: [65, 80], race: [x]", "eligibility.GERD.race",
         "unknown rule field 'race'"),
        ("Asthma: {}", "Asthma: {breakable: [sex]}", "eligibility.Asthma.breakable",
         "only list rules this condition has"),
        ("Asthma: {}", "Asthma: {ages: [5, 70], breakable: [age]}", "eligibility.Asthma.breakable",
         "excludes entirely"),
        ("Asthma: {}", "Asthma: []", "eligibility.Asthma", "needs a mapping"),
        ("Asthma: {}", "Asthma: {age_groups: [senior], ages: [2, 10]}", "eligibility.Asthma",
         "no patient this rule allows"),
    ],
)  # fmt: skip
def test_a_faulty_rule_is_reported_with_its_field_and_line(old, new, path, message):
    text = TINY + RULES.replace(old, new)
    [problem] = problems_of(text)
    assert problem.path == path
    assert problem.line == line_of(text, new.splitlines()[0].strip()[:12])
    assert message in problem.message


def test_a_condition_without_a_rule_is_reported():
    [problem] = problems_of(TINY + RULES.replace("  Asthma: {}\n", ""))
    assert problem.path == "eligibility"
    assert "'Asthma' has no eligibility entry" in problem.message


@pytest.mark.parametrize("share", ["-0.1", "0.9", "'2%'", "true"])
def test_an_infeasible_share_outside_0_to_0_5_is_reported_with_its_line(share):
    text = TINY + RULES + f"infeasible_share: {share}\n"
    [problem] = problems_of(text)
    assert (problem.path, problem.line) == ("infeasible_share", line_of(text, "infeasible_share"))
    assert "fraction between 0 and 0.5" in problem.message


def test_an_infeasible_share_needs_rules_to_break():
    [problem] = problems_of(TINY + "infeasible_share: 0.02\n")
    assert "needs eligibility rules to break" in problem.message
    assert parse_distribution(TINY + "infeasible_share: 0\n").infeasible_share == 0


def test_an_infeasible_share_needs_a_breakable_rule():
    text = TINY + RULES.replace(", breakable: [sex, age]", "")
    [problem] = problems_of(text)
    assert problem.path == "infeasible_share"
    assert "no eligibility rule can be broken" in problem.message
    assert parse_distribution(text + "infeasible_share: 0\n").infeasible_share == 0
