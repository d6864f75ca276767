import copy
import json

import pytest

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.examples import (
    EXAMPLE_ENTRY,
    EXAMPLE_NOW,
    EXAMPLE_PROFILE,
    EXAMPLE_ROSTER,
)
from benchmark.engine.sandbox.roster import generate_roster, render_roster_prompt, validate_roster
from benchmark.engine.sandbox.roster_script import build_roster, respond
from llm.engine.chat import ChatRequest, ChatResponse
from llm.engine.providers.offline import OfflineProvider
from llm.engine.structured import InvalidOutput, StructuredFailure

CHILD = {
    **EXAMPLE_PROFILE,
    "age": 6,
    "conditions": ["Asthma"],
    "address": {"street": "1 Pine St", "city": "Denver", "state": "CO", "zip": "80202"},
}


def broken(change):
    roster = copy.deepcopy(EXAMPLE_ROSTER)
    change(roster)
    return roster


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("offices"), "'offices' must be a list"),
        (lambda r: r.update(offices=r["offices"][:3]), "between 4 and 6 entries, not 3"),
        (lambda r: r.update(providers=r["providers"][:9]), "between 10 and 15 entries, not 9"),
        (lambda r: r["offices"][1].pop("hours"), "offices[1].hours must be a non-empty string"),
        (lambda r: r["offices"][0].update(phone="12345"), "offices[0].phone must be a 10-digit"),
        (
            lambda r: r["providers"][2].update(specialty="Wizardry"),
            "providers[2].specialty 'Wizardry' is not an allowed specialty",
        ),
        (
            lambda r: r["providers"][3].update(office_id="office-9"),
            "providers[3].office_id 'office-9'",
        ),
        (lambda r: r["providers"][4].update(id="dr-01"), "providers[4].id 'dr-01' is used twice"),
        (lambda r: r["providers"][4].update(name="priya patel"), "providers[4].name"),
        (lambda r: r["providers"][0].update(name="x" * 300), "longer than 200"),
        (lambda r: r["providers"].__setitem__(5, "Dr. Who"), "providers[5] must be an object"),
    ],
)
def test_validator_names_the_offending_field(change, message):
    with pytest.raises(InvalidOutput) as error:
        validate_roster(broken(change))
    assert message in str(error.value)


def test_validator_rejects_a_non_object():
    with pytest.raises(InvalidOutput, match="JSON object"):
        validate_roster(["offices"])


def test_validator_normalises_specialty_synonyms_and_phones():
    roster = broken(
        lambda r: (
            r["providers"][4].update(specialty="cardiologist"),
            r["offices"][0].update(phone="+1 (512) 555-0110"),
        )
    )
    valid = validate_roster(roster)
    assert valid["providers"][4]["specialty"] == "Cardiology"
    assert valid["offices"][0]["phone"] == "5125550110"


def test_validator_requires_a_pcp_suited_to_a_child():
    adults_only = broken(
        lambda r: [
            p.update(specialty="Internal Medicine")
            for p in r["providers"]
            if p["specialty"] in {"Family Medicine", "Geriatric Medicine"}
        ]
    )
    validate_roster(adults_only, patient_age=40)
    with pytest.raises(InvalidOutput, match="Family Medicine, Pediatrics"):
        validate_roster(adults_only, patient_age=6)


def test_prompt_carries_the_patients_location_conditions_and_vocabulary():
    prompt = render_roster_prompt(EXAMPLE_ENTRY)
    assert "Austin, TX 78701" in prompt and "Chronic kidney disease" in prompt
    assert "Nephrology" in prompt and "$" not in prompt
    assert "Pediatrics" in render_roster_prompt(CHILD).split("means one of:")[1]


def test_offline_roster_is_valid_and_deterministic():
    first = build_roster(EXAMPLE_PROFILE, 5)
    assert build_roster(EXAMPLE_PROFILE, 5) == first
    assert build_roster(EXAMPLE_PROFILE, 6) != first
    assert validate_roster(first, patient_age=65) == first


@pytest.mark.parametrize("seed", range(25))
def test_offline_roster_always_fits_the_patient(seed):
    for profile in (EXAMPLE_PROFILE, CHILD, {}):
        roster = build_roster(profile, seed)
        validate_roster(roster, patient_age=profile.get("age"))


def test_offline_roster_is_near_the_patient_and_has_relevant_specialists():
    roster = build_roster(CHILD, 1)
    assert all("Denver, CO 80202" in office["address"] for office in roster["offices"])
    specialties = {provider["specialty"] for provider in roster["providers"]}
    assert {"Pediatrics", "Pulmonology"} <= specialties
    nephrology = {p["specialty"] for p in build_roster(EXAMPLE_PROFILE, 1)["providers"]}
    assert "Nephrology" in nephrology


def test_offline_script_answers_with_json_and_estimated_usage():
    request = ChatRequest(
        model="offline/careful",
        purpose="roster",
        system="s" * 400,
        messages=(),
        hints={"profile": EXAMPLE_PROFILE, "seed": 3},
    )
    response = respond(request, "careful")
    assert json.loads(response.text) == build_roster(EXAMPLE_PROFILE, 3)
    assert response.usage.output_tokens == len(response.text) // 4
    assert response.usage.input_tokens == 100


def test_generate_roster_through_the_offline_provider_builds_a_sandbox():
    roster, responses = generate_roster(
        OfflineProvider("careful"), EXAMPLE_PROFILE, model="offline/careful", seed=11
    )
    assert len(responses) == 1 and responses[0].model == "offline/careful"
    sandbox = Sandbox.build(EXAMPLE_PROFILE, roster, 11, EXAMPLE_NOW)
    assert sandbox.pcp["specialty"] in {
        "Family Medicine",
        "Internal Medicine",
        "Geriatric Medicine",
    }


class ScriptedClient:
    """Answers with the given texts in turn and keeps the requests it saw."""

    def __init__(self, *texts):
        self.texts = list(texts)
        self.requests = []

    def chat(self, request):
        self.requests.append(request)
        return ChatResponse(text=self.texts.pop(0))


def test_generate_roster_feeds_the_validation_error_back_and_repairs():
    bad = broken(lambda r: r["providers"][0].update(specialty="Wizardry"))
    client = ScriptedClient(json.dumps(bad), json.dumps(EXAMPLE_ROSTER))
    roster, responses = generate_roster(client, EXAMPLE_PROFILE, model="openai/x", seed=1)
    assert len(responses) == 2 and roster["providers"][0]["specialty"] == "Family Medicine"
    first, repair = client.requests
    assert first.purpose == "roster" and first.hints == {"profile": EXAMPLE_PROFILE, "seed": 1}
    assert "providers[0].specialty" in repair.messages[-1].content


def test_generate_roster_gives_up_after_bounded_repairs():
    client = ScriptedClient("no json", "still none", "nope")
    with pytest.raises(StructuredFailure):
        generate_roster(client, EXAMPLE_PROFILE, model="openai/x", seed=1)
