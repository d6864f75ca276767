import pytest

WHOLE_WINDOW = {"start_date": "2026-11-04", "end_date": "2026-11-17"}


def open_slot(sandbox, **match):
    return next(
        slot
        for slot in sandbox.slots
        if slot["status"] == "open" and all(slot[key] == value for key, value in match.items())
    )


def available_ids(call, **filters):
    ok, content = call("get_available_appointments", **WHOLE_WINDOW, **filters)
    assert ok
    return {slot["slot_id"] for slot in content["slots"]}


def book(call, slot):
    return call(
        "schedule_appointment",
        appointment_type=slot["type"],
        preferred_date=slot["date"],
        reason="follow-up",
        slot_id=slot["id"],
    )


def test_list_doctors_returns_the_whole_roster_with_one_pcp(call, sandbox):
    ok, content = call("list_doctors")
    assert ok and len(content["doctors"]) == 12
    assert [d["id"] for d in content["doctors"] if d["is_pcp"]] == [sandbox.pcp_id]
    assert content["doctors"][0]["office"]["name"] == "Riverside Primary Care"


@pytest.mark.parametrize("specialty", ["Cardiology", "cardiology", "heart doctor", "cardiologist"])
def test_list_doctors_filters_by_specialty_or_its_synonyms(call, specialty):
    ok, content = call("list_doctors", specialty=specialty)
    assert ok and {d["name"] for d in content["doctors"]} == {"Helen Park", "Samuel Greene"}


def test_list_doctors_primary_care_selects_every_primary_care_specialty(call):
    ok, content = call("list_doctors", specialty="primary care")
    assert ok and len(content["doctors"]) == 5


def test_list_doctors_says_when_a_known_specialty_has_nobody(call):
    ok, content = call("list_doctors", specialty="Dermatology")
    assert ok and content["doctors"] == [] and "No clinician" in content["note"]


def test_list_doctors_rejects_an_unknown_specialty_listing_the_vocabulary(call):
    ok, content = call("list_doctors", specialty="Astrology")
    assert not ok and "not a known specialty" in content["error"]
    assert "Cardiology" in content["valid_specialties"]


def test_available_appointments_are_open_sorted_and_in_range(call, sandbox):
    ok, content = call(
        "get_available_appointments",
        start_date="2026-11-05",
        end_date="2026-11-06",
        doctor="Dr. Helen Park",
    )
    assert ok and content["slots"]
    keys = [(s["date"], s["time"]) for s in content["slots"]]
    assert keys == sorted(keys)
    assert {s["date"] for s in content["slots"]} <= {"2026-11-05", "2026-11-06"}
    assert {s["doctor"] for s in content["slots"]} == {"Helen Park"}
    assert content["total"] == len(content["slots"])


def test_available_appointments_filter_by_pcp_and_by_specialty(call, sandbox):
    pcp_slots = available_ids(call, doctor="PCP")
    assert pcp_slots and all(
        sandbox.slots_by_id[s]["doctor_id"] == sandbox.pcp_id for s in pcp_slots
    )
    ok, content = call("get_available_appointments", **WHOLE_WINDOW, specialty="Nephrology")
    assert ok and {s["specialty"] for s in content["slots"]} == {"Nephrology"}


def test_available_appointments_are_capped_and_say_so(call):
    ok, content = call("get_available_appointments", **WHOLE_WINDOW)
    assert ok and len(content["slots"]) == 40 and content["total"] > 40
    assert "first 40" in content["note"]


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2026-11-10", "2026-11-05", "before"),
        ("2026-11-03", "2026-11-05", "outside the booking window"),
        ("2026-11-04", "2026-11-18", "outside the booking window"),
        ("next tuesday", "2026-11-05", "YYYY-MM-DD"),
        ("2026-02-30", "2026-11-05", "YYYY-MM-DD"),
    ],
)
def test_available_appointments_reject_bad_date_ranges(call, start, end, message):
    ok, content = call("get_available_appointments", start_date=start, end_date=end)
    assert not ok and message in content["error"]


def test_available_appointments_reject_an_unknown_doctor(call):
    ok, content = call("get_available_appointments", **WHOLE_WINDOW, doctor="Dr. Nobody")
    assert not ok and "list_doctors" in content["error"]


def test_booking_a_listed_slot_books_exactly_that_slot(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-05")
    ok, content = book(call, slot)
    assert ok and content["exact_match"] is True
    appointment = content["appointment"]
    assert appointment["slot_id"] == slot["id"] and appointment["doctor"] == "Helen Park"
    assert sandbox.write_actions[-1] == {
        "tool": "schedule_appointment",
        "action": "booked",
        "appointment_id": "appt-1",
        "slot_id": slot["id"],
        "appointment_type": slot["type"],
        "doctor_id": "dr-05",
        "doctor": "Helen Park",
        "specialty": "Cardiology",
        "date": slot["date"],
        "time": slot["time"],
        "exact_match": True,
    }


def test_booking_removes_the_slot_from_later_availability(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-05")
    assert slot["id"] in available_ids(call, doctor="dr-05")
    book(call, slot)
    assert slot["id"] not in available_ids(call, doctor="dr-05")


def test_a_booked_slot_cannot_be_booked_again(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-05")
    book(call, slot)
    ok, content = book(call, slot)
    assert not ok and "already booked" in content["error"]


def test_booking_a_slot_checks_type_date_and_doctor(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-05")
    other_type = next(t for t in ("in-person", "telehealth", "phone") if t != slot["type"])
    base = {"preferred_date": slot["date"], "reason": "x", "slot_id": slot["id"]}
    ok, content = call("schedule_appointment", appointment_type=other_type, **base)
    assert not ok and f"is a {slot['type']} slot" in content["error"]
    ok, content = call(
        "schedule_appointment",
        appointment_type=slot["type"],
        **{
            **base,
            "preferred_date": "2026-11-17" if slot["date"] != "2026-11-17" else "2026-11-16",
        },
    )
    assert not ok and "not on 'preferred_date'" in content["error"]
    ok, content = call(
        "schedule_appointment", appointment_type=slot["type"], doctor="dr-06", **base
    )
    assert not ok and "is not with Samuel Greene" in content["error"]
    assert all(s["status"] == "open" for s in sandbox.slots)


def test_booking_an_unknown_slot_is_refused(call):
    ok, content = call(
        "schedule_appointment",
        appointment_type="phone",
        preferred_date="2026-11-05",
        reason="x",
        slot_id="slot-nope",
    )
    assert not ok and "no slot" in content["error"]


def test_booking_without_slot_id_matches_an_exact_request(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-05", date="2026-11-10")
    ok, content = call(
        "schedule_appointment",
        appointment_type=slot["type"],
        preferred_date=slot["date"],
        preferred_time=slot["time"],
        doctor="Helen Park",
        reason="palpitations",
    )
    assert ok and content["exact_match"] is True and "changes" not in content
    assert content["appointment"]["slot_id"] == slot["id"]


def test_booking_defaults_to_the_pcp(call, sandbox):
    ok, content = call(
        "schedule_appointment",
        appointment_type="in-person",
        preferred_date="2026-11-11",
        reason="annual exam",
    )
    assert ok and content["appointment"]["doctor_id"] == sandbox.pcp_id


@pytest.mark.parametrize(
    ("spoken", "canonical"),
    [
        ("virtual", "telehealth"),
        ("video", "telehealth"),
        ("video_call", "telehealth"),
        ("Telemedicine", "telehealth"),
        ("office", "in-person"),
        ("in person", "in-person"),
        ("in_person", "in-person"),
        ("call", "phone"),
        ("telephone", "phone"),
    ],
)
def test_appointment_type_synonyms_are_normalised(call, spoken, canonical):
    ok, content = call(
        "schedule_appointment",
        appointment_type=spoken,
        preferred_date="2026-11-12",
        doctor="dr-01",
        reason="x",
    )
    assert ok and content["appointment"]["appointment_type"] == canonical


def test_an_unknown_appointment_type_is_refused(call):
    ok, content = call(
        "schedule_appointment",
        appointment_type="carrier pigeon",
        preferred_date="2026-11-12",
        reason="x",
    )
    assert not ok and "in-person, telehealth, phone" in content["error"]


def test_a_weekend_request_falls_back_to_the_nearest_weekday_and_says_so(call):
    ok, content = call(
        "schedule_appointment",
        appointment_type="in-person",
        preferred_date="2026-11-07",
        doctor="dr-01",
        reason="x",
    )
    assert ok and content["exact_match"] is False
    assert content["changes"][0]["field"] == "date"
    assert content["changes"][0]["requested"] == "2026-11-07"
    assert content["appointment"]["date"] in {
        "2026-11-06",
        "2026-11-09",
        "2026-11-05",
        "2026-11-10",
    }
    assert "closest" in content["note"]


def test_it_falls_back_to_another_clinician_of_the_same_specialty(call, sandbox):
    for slot in sandbox.slots:
        if slot["doctor_id"] == "dr-05" and slot["type"] == "phone":
            slot["status"] = "booked"
    ok, content = call(
        "schedule_appointment",
        appointment_type="phone",
        preferred_date="2026-11-10",
        doctor="Helen Park",
        reason="x",
    )
    assert ok and content["appointment"]["doctor"] == "Samuel Greene"
    assert {"field": "doctor", "requested": "Helen Park", "booked": "Samuel Greene"} in (
        content["changes"]
    )
    assert sandbox.write_actions[-1]["exact_match"] is False


def test_it_falls_back_to_another_type_when_the_specialty_has_none_left(call, sandbox):
    for slot in sandbox.slots:
        if slot["doctor_id"] in {"dr-05", "dr-06"} and slot["type"] == "telehealth":
            slot["status"] = "booked"
    ok, content = call(
        "schedule_appointment",
        appointment_type="video",
        preferred_date="2026-11-10",
        doctor="dr-05",
        reason="x",
    )
    assert ok and content["appointment"]["doctor_id"] == "dr-05"
    assert content["appointment"]["appointment_type"] != "telehealth"
    assert "appointment_type" in {change["field"] for change in content["changes"]}


def test_it_refuses_when_the_whole_specialty_is_booked_out(call, sandbox):
    for slot in sandbox.slots:
        if slot["doctor_id"] in {"dr-05", "dr-06"}:
            slot["status"] = "booked"
    ok, content = call(
        "schedule_appointment",
        appointment_type="phone",
        preferred_date="2026-11-10",
        doctor="dr-05",
        reason="x",
    )
    assert not ok and "No open slot" in content["error"]


@pytest.mark.parametrize(
    ("preference", "low", "high"),
    [
        ("morning", "00:00", "11:59"),
        ("afternoon", "12:00", "16:59"),
        ("2:30 pm", "14:30", "14:30"),
        ("14:30", "14:30", "14:30"),
    ],
)
def test_time_preferences_pick_a_slot_in_that_part_of_the_day(call, sandbox, preference, low, high):
    slot = open_slot(sandbox, doctor_id="dr-05", date="2026-11-10")
    for other in sandbox.slots:
        if other["doctor_id"] == "dr-05" and other["type"] == slot["type"]:
            other["time"] = low  # make a matching slot exist on every day
    ok, content = call(
        "schedule_appointment",
        appointment_type=slot["type"],
        preferred_date="2026-11-10",
        preferred_time=preference,
        doctor="dr-05",
        reason="x",
    )
    assert ok and low <= content["appointment"]["time"] <= high
    assert content["exact_match"] is True


def test_an_unavailable_time_books_the_nearest_time_and_reports_it(call, sandbox):
    ok, content = call(
        "schedule_appointment",
        appointment_type="in-person",
        preferred_date="2026-11-10",
        preferred_time="evening",
        doctor="dr-01",
        reason="x",
    )
    assert ok and content["exact_match"] is False
    assert {"field", "requested", "booked"} <= set(content["changes"][0])
    assert "time" in {change["field"] for change in content["changes"]}


@pytest.mark.parametrize("preference", ["25:00", "noonish", "13 pm", "9:75"])
def test_an_unreadable_time_preference_is_refused(call, preference):
    ok, content = call(
        "schedule_appointment",
        appointment_type="phone",
        preferred_date="2026-11-10",
        preferred_time=preference,
        reason="x",
    )
    assert not ok and "preferred_time" in content["error"]


def test_cancel_restores_the_slot_to_availability(call, sandbox):
    slot = open_slot(sandbox, doctor_id="dr-07")
    book(call, slot)
    ok, content = call("cancel_appointment", appointment_id="appt-1")
    assert ok and content["cancelled"]["status"] == "cancelled"
    assert slot["id"] in available_ids(call, doctor="dr-07")
    assert sandbox.write_actions[-1]["action"] == "cancelled"
    assert sandbox.write_actions[-1]["slot_id"] == slot["id"]


def test_cancel_refuses_an_id_that_is_not_the_patients(call, sandbox):
    book(call, open_slot(sandbox, doctor_id="dr-07"))
    ok, content = call("cancel_appointment", appointment_id="appt-9")
    assert not ok and "no appointment" in content["error"]
    assert content["scheduled_appointment_ids"] == ["appt-1"]
    other_slot = open_slot(sandbox, doctor_id="dr-08")
    ok, content = call("cancel_appointment", appointment_id=other_slot["id"])
    assert not ok and other_slot["status"] == "open"


def test_cancelling_twice_is_refused(call, sandbox):
    book(call, open_slot(sandbox, doctor_id="dr-07"))
    call("cancel_appointment", appointment_id="appt-1")
    ok, content = call("cancel_appointment", appointment_id="APPT-1")
    assert not ok and "already cancelled" in content["error"]


def test_list_appointments_shows_scheduled_visits_in_date_order(call, sandbox):
    assert call("list_appointments") == (True, {"appointments": []})
    later = open_slot(sandbox, doctor_id="dr-07", date="2026-11-16")
    sooner = open_slot(sandbox, doctor_id="dr-08", date="2026-11-05")
    book(call, later)
    book(call, sooner)
    ok, content = call("list_appointments")
    assert [a["slot_id"] for a in content["appointments"]] == [sooner["id"], later["id"]]
    call("cancel_appointment", appointment_id="appt-1")
    ok, content = call("list_appointments")
    assert [a["appointment_id"] for a in content["appointments"]] == ["appt-2"]
