import pytest


def medication(sandbox, name):
    return next(m for m in sandbox.medications if m["name"] == name)


def test_list_medications_groups_by_status(call):
    ok, content = call("list_medications")
    assert ok and set(content) == {"active", "under_renewal", "past"}
    assert [m["name"] for m in content["active"]] == ["Metformin", "Lisinopril"]
    assert [m["name"] for m in content["under_renewal"]] == ["Atorvastatin"]
    assert content["past"][0] == {
        "medication_id": "med-4",
        "name": "Glipizide",
        "dosage": "5 mg",
        "frequency": "once daily with breakfast",
        "status": "past",
        "refills_remaining": 0,
        "last_filled": "2025-12-02",
        "pharmacy": "CVS Pharmacy",
    }


@pytest.mark.parametrize(
    ("status", "group"), [("past", "past"), ("Pending renewal", "under_renewal")]
)
def test_list_medications_filters_one_status(call, status, group):
    ok, content = call("list_medications", status=status)
    assert ok and list(content) == [group]


def test_list_medications_rejects_an_unknown_status(call):
    ok, content = call("list_medications", status="frozen")
    assert not ok and "active, under_renewal, past" in content["error"]


@pytest.mark.parametrize("name", ["Metformin", "metformin", "METFORMIN 500 mg", "metfor", "med-1"])
def test_refill_matches_names_loosely(call, sandbox, name):
    ok, content = call("request_refill", medication_name=name)
    assert ok and content["medication"]["name"] == "Metformin"


def test_refill_decrements_refills_and_dates_the_fill(call, sandbox):
    ok, content = call("request_refill", medication_name="metformin")
    assert ok and medication(sandbox, "Metformin")["refills_remaining"] == 1
    assert medication(sandbox, "Metformin")["last_filled"] == "2026-11-04"
    assert sandbox.write_actions[-1] == {
        "tool": "request_refill",
        "action": "refill_requested",
        "medication_id": "med-1",
        "medication": "Metformin",
        "dosage": "500 mg",
        "refills_remaining": 1,
        "last_filled": "2026-11-04",
        "pharmacy": "CVS Pharmacy",
    }


def test_refill_works_for_a_medication_under_renewal(call, sandbox):
    ok, _ = call("request_refill", medication_name="atorvastatin")
    assert ok and medication(sandbox, "Atorvastatin")["refills_remaining"] == 0


def test_refills_run_out_and_then_refer_to_the_provider(call, sandbox):
    assert call("request_refill", medication_name="metformin")[0]
    assert call("request_refill", medication_name="metformin")[0]
    ok, content = call("request_refill", medication_name="metformin")
    assert not ok and "contact their provider" in content["error"]
    assert medication(sandbox, "Metformin")["refills_remaining"] == 0


def test_it_refuses_a_refill_with_zero_refills_left(call, sandbox):
    ok, content = call("request_refill", medication_name="Lisinopril")
    assert not ok and "no refills remaining" in content["error"]
    assert medication(sandbox, "Lisinopril")["last_filled"] == "2026-10-12"
    assert sandbox.write_actions == []


def test_it_refuses_past_medication_refill(call, sandbox):
    ok, content = call("request_refill", medication_name="glipizide")
    assert not ok and "request a new prescription" in content["error"]


def test_it_refuses_a_refill_for_an_unknown_medication(call):
    ok, content = call("request_refill", medication_name="Warfarin")
    assert not ok and "No medication on file" in content["error"]
    assert "Metformin" in content["medications_on_file"]


def test_it_refuses_a_refill_without_a_preferred_pharmacy(call, sandbox):
    sandbox.profile["preferred_pharmacy"] = None
    ok, content = call("request_refill", medication_name="metformin")
    assert not ok and "update_pharmacy" in content["error"]
    assert medication(sandbox, "Metformin")["refills_remaining"] == 2


def test_an_ambiguous_partial_name_is_refused(call, sandbox):
    sandbox.medications.append(
        {**medication(sandbox, "Metformin"), "id": "med-5", "name": "Metformin ER"}
    )
    ok, content = call("request_refill", medication_name="metf")
    assert not ok and "several medications" in content["error"]
    ok, content = call("request_refill", medication_name="Metformin")
    assert ok and content["medication"]["medication_id"] == "med-1"


def test_refills_go_to_the_newly_chosen_pharmacy(call, sandbox):
    call("update_pharmacy", name="Walgreens")
    ok, content = call("request_refill", medication_name="metformin")
    assert ok and content["medication"]["pharmacy"] == "Walgreens"


def test_new_prescription_is_recorded_under_renewal_with_dosage_to_be_decided(call, sandbox):
    ok, content = call(
        "request_new_prescription",
        medication_name="Amlodipine",
        reason="blood pressure above target",
        dosage="5 mg",
    )
    assert ok
    record = content["medication"]
    assert record["medication_id"] == "med-5" and record["status"] == "under_renewal"
    assert (record["dosage"], record["frequency"]) == ("TBD", "TBD")
    assert record["requested_dosage"] == "5 mg" and record["reviewer"] == sandbox.pcp["name"]
    assert sandbox.write_actions[-1]["action"] == "new_prescription_requested"
    assert sandbox.write_actions[-1]["medication"] == "Amlodipine"


def test_a_past_medication_can_be_prescribed_again(call, sandbox):
    ok, content = call("request_new_prescription", medication_name="Glipizide", reason="x")
    assert ok and content["medication"]["status"] == "under_renewal"
    ok, content = call("request_refill", medication_name="glipizide")
    assert not ok and "no refills remaining" in content["error"]


@pytest.mark.parametrize(
    ("name", "message"),
    [("metformin", "use request_refill"), ("Atorvastatin", "waiting for provider review")],
)
def test_new_prescription_is_refused_for_current_medications(call, sandbox, name, message):
    ok, content = call("request_new_prescription", medication_name=name, reason="x")
    assert not ok and message in content["error"] and len(sandbox.medications) == 4


def test_new_prescription_needs_a_reason(call):
    ok, content = call("request_new_prescription", medication_name="Amlodipine", reason="  ")
    assert not ok and "'reason' is required" in content["error"]
