import copy
import json

import pytest

from benchmark.engine.enrichment import enrich, render_prompt, validate_entry
from benchmark.engine.enrichment_script import build_entry
from llm.engine.chat import ProviderError
from llm.engine.providers.offline import OfflineProvider
from llm.engine.structured import InvalidOutput

MODEL = "offline/careful"


@pytest.fixture
def seed(seed_with):
    return seed_with(
        condition="Type 2 diabetes with chronic kidney disease",
        severity="moderate",
        age_group="middle_aged",
        age=58,
        sex="female",
        gender="woman",
    )


@pytest.fixture
def entry(seed, today):
    return build_entry(seed, today)


def invalid_because(data, seed, today) -> str:
    with pytest.raises(InvalidOutput) as caught:
        validate_entry(data, seed, today=today)
    return str(caught.value)


def test_the_offline_script_gives_a_valid_entry_in_one_call(seed, today):
    result = enrich(OfflineProvider("careful"), seed, model=MODEL, today=today)
    assert result.ok and result.failure_reason is None
    assert len(result.responses) == 1
    assert result.entry["patient_profile"]["age"] == 58


def test_a_malformed_first_answer_is_repaired_on_the_next_attempt(seed, today):
    client = OfflineProvider("malformed-once")
    result = enrich(client, seed, model="offline/malformed-once", today=today)
    assert result.ok
    assert len(result.responses) == 2


def test_the_request_is_an_enrichment_call_carrying_the_seed(seed, today, entry, scripted_client):
    client = scripted_client([json.dumps(entry)])
    enrich(client, seed, model="openai/some-model", today=today)
    [request] = client.requests
    assert request.purpose == "enrichment"
    assert request.model == "openai/some-model"
    assert request.hints == {"seed": seed, "today": "2026-11-02"}
    assert json.dumps(seed, indent=2) in request.messages[0].content
    assert "2026-11-02" in request.messages[0].content


def test_the_prompt_states_the_age_group_bounds(seed, today):
    _, user = render_prompt(seed, today)
    assert "inside their age group (36 to 64)" in user


@pytest.mark.parametrize(
    ("first_answer", "complaint"),
    [
        ("Sure! Here is a patient who lives in Ohio and has diabetes.", "No complete JSON object"),
        ('{"patient_profile": {"first_name": "Ana", "last_name": ', "cut off or malformed"),
    ],
    ids=["prose", "truncated"],
)
def test_an_unparseable_answer_is_repaired(
    seed, today, entry, scripted_client, first_answer, complaint
):
    client = scripted_client([first_answer, json.dumps(entry)])
    result = enrich(client, seed, model=MODEL, today=today)
    assert result.entry == entry
    feedback = client.requests[1].messages[-1].content
    assert complaint in feedback


def test_wrong_types_are_repaired_with_their_paths_fed_back(seed, today, entry, scripted_client):
    broken = copy.deepcopy(entry)
    broken["patient_profile"]["medications"][0]["refills_remaining"] = "two"
    broken["patient_profile"]["phone"] = 5125550143
    client = scripted_client([json.dumps(broken), json.dumps(entry)])
    result = enrich(client, seed, model=MODEL, today=today)
    assert result.ok
    feedback = client.requests[1].messages[-1].content
    assert "$.patient_profile.medications[0].refills_remaining" in feedback
    assert "$.patient_profile.phone" in feedback


def test_it_fails_with_the_reason_once_repairs_run_out(seed, today, scripted_client):
    client = scripted_client(["no idea", "still prose", "{not json"])
    result = enrich(client, seed, model=MODEL, today=today, max_repairs=2)
    assert not result.ok
    assert result.entry is None
    assert "invalid after 3 attempts" in result.failure_reason
    assert len(result.responses) == 3


def test_a_schema_failure_after_retries_never_returns_partial_data(
    seed, today, entry, scripted_client
):
    broken = copy.deepcopy(entry)
    del broken["patient_story"]
    client = scripted_client([json.dumps(broken)] * 2)
    result = enrich(client, seed, model=MODEL, today=today, max_repairs=1)
    assert result.entry is None
    assert "'patient_story' is a required property" in result.failure_reason


def test_provider_errors_propagate(seed, today, scripted_client):
    client = scripted_client([ProviderError("down", kind="server")])
    with pytest.raises(ProviderError):
        enrich(client, seed, model=MODEL, today=today)


def test_a_valid_entry_is_returned_unchanged(entry, seed, today):
    assert validate_entry(entry, seed, today=today) is entry


def test_it_names_the_path_of_a_phone_with_punctuation(entry, seed, today):
    entry["patient_profile"]["emergency_contact"]["phone"] = "(512) 555-0143"
    message = invalid_because(entry, seed, today)
    assert "$.patient_profile.emergency_contact.phone" in message
    assert "ten digits" in message


def test_it_requires_at_least_one_active_medication(entry, seed, today):
    for medication in entry["patient_profile"]["medications"]:
        medication["status"] = "past"
    assert "at least one needs status 'active'" in invalid_because(entry, seed, today)


def test_it_refuses_an_unknown_medication_status_and_negative_refills(entry, seed, today):
    medication = entry["patient_profile"]["medications"][0]
    medication["status"] = "paused"
    medication["refills_remaining"] = -1
    message = invalid_because(entry, seed, today)
    assert "$.patient_profile.medications[0].status" in message
    assert "$.patient_profile.medications[0].refills_remaining" in message


def test_it_refuses_more_than_five_medications(entry, seed, today):
    medications = entry["patient_profile"]["medications"]
    entry["patient_profile"]["medications"] = (medications * 6)[:6]
    assert "has 6 item(s); allows at most 5" in invalid_because(entry, seed, today)


def test_it_refuses_a_single_medication(entry, seed, today):
    entry["patient_profile"]["medications"] = entry["patient_profile"]["medications"][:1]
    assert "needs at least 2" in invalid_because(entry, seed, today)


def test_it_refuses_a_last_filled_date_after_today(entry, seed, today):
    entry["patient_profile"]["medications"][0]["last_filled"] = "2027-01-01"
    assert "last_filled: 2027-01-01 is after today" in invalid_because(entry, seed, today)


def test_it_refuses_a_malformed_date(entry, seed, today):
    entry["patient_profile"]["date_of_birth"] = "12/04/1968"
    assert "$.patient_profile.date_of_birth" in invalid_because(entry, seed, today)


def test_it_refuses_an_age_outside_the_seed_age_group(entry, seed, today):
    entry["patient_profile"]["age"] = 70
    entry["patient_profile"]["date_of_birth"] = "1956-01-15"
    assert "outside the middle_aged age group (36-64)" in invalid_because(entry, seed, today)


def test_it_refuses_a_birth_date_that_contradicts_the_age(entry, seed, today):
    entry["patient_profile"]["date_of_birth"] = "1990-03-03"
    message = invalid_because(entry, seed, today)
    assert "date_of_birth: 1990-03-03 makes the patient 36 on 2026-11-02, but age is 58" in message


def test_it_tolerates_a_birth_date_one_year_off(entry, seed, today):
    entry["patient_profile"]["date_of_birth"] = "1967-06-01"  # 59 on the reference date
    validate_entry(entry, seed, today=today)


def test_it_refuses_a_sex_that_differs_from_the_seed(entry, seed, today):
    entry["patient_profile"]["sex"] = "male"
    assert "the seed's sex is 'female'" in invalid_because(entry, seed, today)


def test_it_requires_a_caregiver_for_a_child(seed_with, today):
    child = seed_with(age_group="pediatric", age=8, condition="Asthma")
    entry = build_entry(child, today)
    entry["patient_profile"]["caregiver"] = None
    assert "under 18 needs a caregiver" in invalid_because(entry, child, today)


def test_self_pay_needs_plan_type_none(entry, seed, today):
    entry["patient_profile"]["insurance"] = {"provider": "Self Pay", "plan_type": "PPO"}
    assert "must be 'none' for Self Pay" in invalid_because(entry, seed, today)


def test_an_empty_allergy_list_is_fine(entry, seed, today):
    entry["patient_profile"]["allergies"] = []
    validate_entry(entry, seed, today=today)


@pytest.mark.parametrize(
    "story",
    ["Only one sentence here.", "One. Two. Three. Four. Five. Six."],
    ids=["too-short", "too-long"],
)
def test_it_refuses_a_story_outside_three_to_five_sentences(entry, seed, today, story):
    entry["patient_story"] = story
    assert "$.patient_story: has" in invalid_because(entry, seed, today)


def test_it_refuses_an_unknown_scenario_complexity(entry, seed, today):
    entry["scenario_complexity"] = "easy"
    assert "$.scenario_complexity" in invalid_because(entry, seed, today)


def test_a_non_object_profile_is_reported_at_its_path(entry, seed, today):
    entry["patient_profile"] = "Maria, 58"
    assert "$.patient_profile: 'Maria, 58' is not of type 'object'" in invalid_because(
        entry, seed, today
    )


# --- the seed's sex, age and condition, and contradictions kept on purpose ------------------

BROKEN = {
    "rule": "sex",
    "text": "Benign prostatic hyperplasia needs male sex at birth; this patient was born female.",
}


@pytest.fixture
def infeasible_seed(seed_with):
    return seed_with(
        condition="Benign prostatic hyperplasia",
        age_group="senior",
        age=71,
        sex="female",
        gender="woman",
        broken_rule=BROKEN,
    )


def test_the_prompt_tells_the_model_to_keep_a_contradiction_made_on_purpose(infeasible_seed, today):
    _, user = render_prompt(infeasible_seed, today)
    assert BROKEN["text"] in user
    assert "implausible on purpose" in user and "keep it" in user
    assert "This is an ordinary case" not in user


def test_the_prompt_says_an_ordinary_seed_is_consistent(seed, today):
    _, user = render_prompt(seed, today)
    assert "This is an ordinary case" in user
    assert "implausible on purpose" not in user and "$" not in user


def test_it_refuses_an_age_other_than_the_seeds(entry, seed, today):
    entry["patient_profile"]["age"] = 60
    entry["patient_profile"]["date_of_birth"] = "1966-03-01"
    assert "$.patient_profile.age: is 60 but the seed's age is 58" in invalid_because(
        entry, seed, today
    )


def test_it_refuses_a_profile_that_drops_the_seeds_condition(entry, seed, today):
    entry["patient_profile"]["conditions"] = ["Hypertension", "Chronic kidney disease"]
    message = invalid_because(entry, seed, today)
    assert "$.patient_profile.conditions: none names the seed's condition" in message
    assert "'type 2 diabetes'" in message


@pytest.mark.parametrize(
    ("condition", "written"),
    [
        ("Type 2 diabetes with chronic kidney disease", "Type 2 Diabetes Mellitus"),
        ("Alzheimer's dementia", "Alzheimer’s dementia, moderate"),
        ("Lupus (SLE) with nephritis and anemia", "Systemic lupus erythematosus"),
        ("Atrial fibrillation on anticoagulation", "Paroxysmal atrial fibrillation"),
        ("Iron-deficiency anemia", "Iron deficiency anemia"),
    ],
)
def test_the_condition_may_be_worded_freely_around_its_leading_diagnosis(
    entry, seed, today, condition, written
):
    seed = {**seed, "condition": condition}
    entry["patient_profile"]["conditions"] = ["Hypertension", written]
    validate_entry(entry, seed, today=today)


def test_a_diagnosis_only_inside_another_word_does_not_count(entry, seed_with, today):
    seed = seed_with(condition="Gout", age_group="middle_aged", age=58, sex="female")
    entry["patient_profile"]["conditions"] = ["Sprouting gouty tophi"]
    assert "none names the seed's condition" in invalid_because(entry, seed, today)


def test_infeasible_is_refused_for_a_seed_with_no_broken_rule(entry, seed, today):
    entry["scenario_complexity"] = "infeasible"
    assert "'infeasible' is only for seeds that break a rule" in invalid_because(entry, seed, today)


def test_a_profile_that_contradicts_its_seed_gets_the_repair_turn(
    seed, today, entry, scripted_client
):
    swapped = copy.deepcopy(entry)
    swapped["patient_profile"]["sex"] = "male"
    swapped["patient_profile"]["conditions"] = ["Chronic kidney disease"]
    client = scripted_client([json.dumps(swapped), json.dumps(entry)])
    result = enrich(client, seed, model=MODEL, today=today)
    assert result.ok and len(client.requests) == 2
    feedback = client.requests[1].messages[-1].content
    assert "$.patient_profile.sex" in feedback and "$.patient_profile.conditions" in feedback


def test_a_model_that_explains_the_contradiction_away_gets_the_repair_turn(
    infeasible_seed, today, scripted_client
):
    kept = build_entry(infeasible_seed, today)
    fixed = copy.deepcopy(kept)
    fixed["patient_profile"]["sex"] = "male"
    fixed["patient_profile"]["conditions"] = ["Overactive bladder"]
    client = scripted_client([json.dumps(fixed), json.dumps(kept)])
    result = enrich(client, infeasible_seed, model=MODEL, today=today)
    assert result.entry == kept
    assert "the seed's sex is 'female'" in client.requests[1].messages[-1].content


def test_an_infeasible_seed_is_labelled_from_its_rule_whatever_the_model_says(
    infeasible_seed, today, scripted_client
):
    answer = build_entry(infeasible_seed, today)
    answer["scenario_complexity"] = "complicated"
    result = enrich(
        scripted_client([json.dumps(answer)]), infeasible_seed, model=MODEL, today=today
    )
    assert result.entry["scenario_complexity"] == "infeasible"
    assert result.entry["patient_profile"] == answer["patient_profile"]
