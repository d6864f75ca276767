"""Telehealth and profile tools."""

import pytest


def message_arguments(**extra):
    return {
        "reason": "BP readings",
        "message": "Readings are around 150/95 this week.",
        "urgency": "routine",
        **extra,
    }


def test_message_goes_to_the_assigned_pcp_with_its_response_time(call, sandbox):
    ok, content = call(
        "message_pcp",
        **message_arguments(symptom_onset="a week ago", relevant_medications=["Lisinopril"]),
    )
    assert ok and content["sent"]["doctor_id"] == sandbox.pcp_id
    assert content["sent"]["expected_response"] == "within 24-48 hours"
    assert content["sent"]["relevant_medications"] == ["Lisinopril"]
    assert sandbox.messages[0]["message_id"] == "msg-1"
    assert sandbox.write_actions[-1] == {
        "tool": "message_pcp",
        "action": "message_sent",
        "message_id": "msg-1",
        "doctor_id": sandbox.pcp_id,
        "doctor": sandbox.pcp["name"],
        "urgency": "routine",
        "reason": "BP readings",
    }


def test_an_urgent_message_is_answered_within_four_hours(call):
    ok, content = call("message_pcp", **message_arguments(urgency="Urgent"))
    assert ok and content["sent"]["urgency"] == "urgent"
    assert content["sent"]["expected_response"] == "within 4 hours"


def test_message_urgency_must_be_routine_or_urgent(call):
    ok, content = call("message_pcp", **message_arguments(urgency="whenever"))
    assert not ok and "routine, urgent" in content["error"]


def test_messaging_is_refused_without_an_assigned_pcp(call, sandbox):
    sandbox.pcp_id = None
    ok, content = call("message_pcp", **message_arguments())
    assert not ok and "no assigned PCP" in content["error"]
    assert sandbox.messages == []


def test_relevant_medications_accepts_a_single_string(call):
    ok, content = call("message_pcp", **message_arguments(relevant_medications="Metformin"))
    assert ok and content["sent"]["relevant_medications"] == ["Metformin"]


def test_queue_resolves_pcp_and_reports_position(call, sandbox):
    waiting_before = sandbox.queue_lengths[sandbox.pcp_id]
    ok, content = call("join_virtual_call_queue", doctor="PCP", reason="dizzy")
    entry = content["queue_entry"]
    assert ok and entry["doctor_id"] == sandbox.pcp_id
    assert entry["position"] == waiting_before + 1
    assert entry["estimated_wait_minutes"] == 10 * entry["position"]
    assert sandbox.write_actions[-1]["action"] == "queued"


def test_joining_the_same_queue_twice_is_refused(call):
    call("join_virtual_call_queue", doctor="dr-05")
    ok, content = call("join_virtual_call_queue", doctor="Helen Park")
    assert not ok and "already in Helen Park's queue" in content["error"]


def test_get_profile_shows_the_record_and_care_team_without_medications(call, sandbox):
    ok, content = call("get_profile")
    profile = content["profile"]
    assert ok and profile["first_name"] == "Maria" and "medications" not in profile
    assert profile["care_team"]["primary_care_provider"]["id"] == sandbox.pcp_id


def test_update_pcp_changes_what_pcp_resolves_to(call, sandbox):
    new_pcp = next(
        p
        for p in sandbox.providers
        if p["specialty"] == "Family Medicine" and p["id"] != sandbox.pcp_id
    )
    previous = sandbox.pcp
    ok, content = call("update_pcp", doctor=new_pcp["name"].upper())
    assert ok and content["pcp"]["id"] == new_pcp["id"]
    assert content["previous_pcp"] == previous["name"]
    assert sandbox.write_actions[-1]["doctor_id"] == new_pcp["id"]
    assert sandbox.write_actions[-1]["previous_doctor_id"] == previous["id"]
    ok, content = call("message_pcp", **message_arguments())
    assert content["sent"]["doctor_id"] == new_pcp["id"]
    ok, content = call(
        "get_available_appointments",
        start_date="2026-11-05",
        end_date="2026-11-17",
        doctor="my PCP",
    )
    assert {slot["doctor_id"] for slot in content["slots"]} == {new_pcp["id"]}


def test_update_pcp_refuses_a_specialist(call, sandbox):
    before = sandbox.pcp_id
    ok, content = call("update_pcp", doctor="dr-05")
    assert not ok and "practises Cardiology" in content["error"]
    assert {d["specialty"] for d in content["eligible_doctors"]} <= {
        "Family Medicine",
        "Internal Medicine",
        "Geriatric Medicine",
    }
    assert sandbox.pcp_id == before


def test_update_pcp_refuses_someone_outside_the_roster(call):
    ok, content = call("update_pcp", doctor="Dr. Gregory House")
    assert not ok and "No clinician" in content["error"]


def test_update_pcp_to_the_current_pcp_changes_nothing(call, sandbox):
    ok, content = call("update_pcp", doctor=sandbox.pcp_id)
    assert ok and "Already" in content["note"] and sandbox.write_actions == []


def test_update_pharmacy_replaces_the_preferred_pharmacy(call, sandbox):
    ok, content = call(
        "update_pharmacy", name="Walgreens", address="1 Main St, Austin, TX", phone="(512) 555-0177"
    )
    assert ok and content["previous_pharmacy"]["name"] == "CVS Pharmacy"
    assert sandbox.profile["preferred_pharmacy"] == {
        "name": "Walgreens",
        "address": "1 Main St, Austin, TX",
        "phone": "5125550177",
    }
    assert sandbox.write_actions[-1]["action"] == "pharmacy_updated"


def test_update_pharmacy_rejects_a_bad_phone(call, sandbox):
    ok, content = call("update_pharmacy", name="Walgreens", phone="555-01")
    assert not ok and "10-digit" in content["error"]
    assert sandbox.profile["preferred_pharmacy"]["name"] == "CVS Pharmacy"


def test_update_insurance_replaces_provider_and_plan(call, sandbox):
    ok, content = call("update_insurance", provider="Self Pay", plan_type="none")
    assert ok and sandbox.profile["insurance"] == {"provider": "Self Pay", "plan_type": "none"}
    assert sandbox.write_actions[-1]["previous"]["provider"] == "Blue Cross Blue Shield"


def test_update_insurance_needs_both_fields(call):
    ok, content = call("update_insurance", provider="Aetna")
    assert not ok and "'plan_type' is required" in content["error"]


def test_update_contact_info_changes_only_given_fields(call, sandbox):
    ok, content = call(
        "update_contact_info",
        email="maria@example.org",
        address={"street": "40 Elm St", "state": "tx"},
    )
    assert ok and set(content["changes"]) == {"email", "address"}
    assert sandbox.profile["address"] == {
        "street": "40 Elm St",
        "city": "Austin",
        "state": "TX",
        "zip": "78701",
    }
    assert sandbox.profile["phone"] == "5125550143"
    assert sandbox.write_actions[-1]["changes"]["email"] == {
        "previous": "maria.lopez@example.com",
        "new": "maria@example.org",
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "at least one"),
        ({"email": "not-an-email"}, "valid email"),
        ({"phone": "12345"}, "10-digit"),
        ({"address": {"zip": "7870"}}, "ZIP"),
        ({"address": {"state": "Texas"}}, "two-letter"),
        ({"address": {"country": "US"}}, "Unknown"),
    ],
)
def test_update_contact_info_rejects_bad_values(call, sandbox, arguments, message):
    before = sandbox.state_hash()
    ok, content = call("update_contact_info", **arguments)
    assert not ok and message in content["error"]
    assert sandbox.state_hash() == before


def test_update_contact_info_with_unchanged_values_records_nothing(call, sandbox):
    ok, content = call("update_contact_info", phone="512-555-0143")
    assert ok and content["changes"] == {} and sandbox.write_actions == []
