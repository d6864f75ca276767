import json
from collections import Counter
from datetime import date
from statistics import mean

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.engine.distribution import default_distribution
from benchmark.engine.enrichment import validate_entry
from benchmark.engine.enrichment_script import (
    FALLBACK_NOTE,
    build_entry,
    matching_notes,
    respond,
)
from benchmark.engine.sampler import sample_seeds
from llm.engine.chat import ChatRequest, Message

TODAY = date(2026, 11, 2)


def request_for(seed, *, repair=None):
    hints = {"seed": seed, "today": TODAY.isoformat()}
    if repair:
        hints["repair"] = repair
    return ChatRequest(
        model="offline/careful",
        purpose="enrichment",
        system="system text",
        messages=(Message(role="user", content="user text"),),
        hints=hints,
    )


@settings(max_examples=40, deadline=None)
@given(sampler_seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_entries_for_any_sampled_seed_pass_validation(sampler_seed):
    for seed in sample_seeds(default_distribution(), 5, sampler_seed):
        validate_entry(build_entry(seed, TODAY), seed, today=TODAY)


def test_the_same_seed_gives_the_same_answer(seed_with):
    seed = seed_with()
    assert respond(request_for(seed), "careful").text == respond(request_for(seed), "x").text


def test_malformed_once_breaks_only_the_first_attempt(seed_with):
    seed = seed_with()
    first = respond(request_for(seed), "malformed-once").text
    repaired = respond(request_for(seed, repair=1), "malformed-once").text
    with pytest.raises(json.JSONDecodeError):
        json.loads(first)
    assert json.loads(repaired) == build_entry(seed, TODAY)


def test_usage_is_estimated_from_text_length(seed_with):
    response = respond(request_for(seed_with()), "careful")
    assert response.usage.output_tokens == len(response.text) // 4
    assert response.usage.input_tokens == len("system text" + "user text") // 4


def test_every_default_condition_has_its_own_notes(distribution):
    generic = [
        c
        for c in distribution.probabilities("condition")
        if matching_notes(c.lower()) == [FALLBACK_NOTE]
    ]
    assert generic == []


def test_medications_suit_the_condition(seed_with):
    entry = build_entry(seed_with(condition="Type 2 diabetes with chronic kidney disease"), TODAY)
    names = {medication["name"] for medication in entry["patient_profile"]["medications"]}
    assert "Metformin" in names
    assert entry["patient_profile"]["conditions"] == ["Type 2 diabetes", "Chronic kidney disease"]


def test_profiles_average_about_four_medications(distribution):
    seeds = sample_seeds(distribution, 1_000, 31)
    counts = [len(build_entry(seed, TODAY)["patient_profile"]["medications"]) for seed in seeds]
    assert min(counts) >= 2 and max(counts) <= 5
    assert 3.6 <= mean(counts) <= 4.4


def test_complexity_is_mostly_complicated_with_a_few_infeasible(distribution):
    seeds = sample_seeds(distribution, 2_000, 32)
    mix = Counter(build_entry(seed, TODAY)["scenario_complexity"] for seed in seeds)
    assert mix.most_common(1)[0][0] == "complicated"
    assert 0 < mix["infeasible"] < 0.08 * len(seeds)
    assert mix["regular"] > 0 and mix["chronic"] > 0


BROKEN_SEX_RULE = {
    "rule": "sex",
    "text": "Pregnancy with gestational diabetes needs female sex at birth; this patient was "
    "born male.",
}


def test_a_seed_breaking_a_rule_on_purpose_keeps_the_contradiction_and_is_infeasible(seed_with):
    seed = seed_with(
        condition="Pregnancy with gestational diabetes",
        sex="male",
        age_group="young_adult",
        age=29,
        broken_rule=BROKEN_SEX_RULE,
    )
    entry = build_entry(seed, TODAY)
    profile = entry["patient_profile"]
    assert entry["scenario_complexity"] == "infeasible"
    assert (profile["sex"], profile["age"]) == ("male", 29)
    assert profile["conditions"][0] == "Pregnancy"
    assert "pregnancy" in entry["patient_story"]
    validate_entry(entry, seed, today=TODAY)


def test_the_label_comes_from_the_seed_never_from_guessing(seed_with):
    # The same attributes without a recorded rule: nobody asked for a contradiction.
    seed = seed_with(condition="Pregnancy with gestational diabetes", sex="male", broken_rule=None)
    assert build_entry(seed, TODAY)["scenario_complexity"] != "infeasible"


def test_sampled_infeasible_seeds_give_valid_infeasible_entries(distribution):
    seeds = [seed for seed in sample_seeds(distribution, 2_000, 33) if seed["broken_rule"]]
    assert seeds
    for seed in seeds:
        entry = build_entry(seed, TODAY)
        assert entry["scenario_complexity"] == "infeasible"
        validate_entry(entry, seed, today=TODAY)


@pytest.mark.parametrize(
    ("condition", "severity", "expected"),
    [
        ("Asthma with allergic rhinitis and eczema", "mild", "complicated"),
        ("Hypothyroidism", "severe", "complicated"),
        ("Hypothyroidism", "mild", "regular"),
        ("Hypothyroidism", "moderate", "chronic"),
    ],
)
def test_complexity_follows_comorbidity_and_severity(seed_with, condition, severity, expected):
    seed = seed_with(condition=condition, severity=severity, task_subcategory="refill")
    assert build_entry(seed, TODAY)["scenario_complexity"] == expected


def test_the_story_names_providers_by_role_only(seed_with):
    story = build_entry(seed_with(condition="Atrial fibrillation on anticoagulation"), TODAY)[
        "patient_story"
    ]
    assert "cardiologist" in story
    assert "Dr." not in story


def test_the_story_reflects_the_care_preference_and_task(seed_with):
    seed = seed_with(
        care_preference="remote", task_subcategory="refill", task_category="medication"
    )
    entry = build_entry(seed, TODAY)
    active = entry["patient_profile"]["medications"][0]["name"]
    assert "telehealth" in entry["patient_story"]
    assert f"almost out of {active}" in entry["patient_story"]


def test_a_child_has_a_parent_as_caregiver(seed_with):
    seed = seed_with(age_group="pediatric", age=6, gender="non-binary")
    profile = build_entry(seed, TODAY)["patient_profile"]
    assert profile["caregiver"]["relationship"] in {"mother", "father"}
    assert profile["pronouns"] == "they/them"
