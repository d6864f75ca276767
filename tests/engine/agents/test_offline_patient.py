"""The scripted patient on its own: what it says to a given assistant message, and why."""

from benchmark.engine.agents import offline_patient
from benchmark.engine.agents.offline_patient.patient import FOLLOW_UPS
from benchmark.engine.agents.personalities import DEFAULT_PATH, parse_personalities
from benchmark.engine.agents.prompts import TERMINATION_TOKEN, render_patient_system
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY, EXAMPLE_NOW
from llm.engine.chat import ChatRequest, Message
from tests.engine.agents.fakes import SEED

OPTIONS = (
    "Here are the earliest open times:\n"
    "1. Monday 2026-11-09 at 09:00 with Ana Ruiz (in-person)\n"
    "2. Monday 2026-11-09 at 10:00 with Ana Ruiz (telehealth)\n"
    "3. Tuesday 2026-11-10 at 11:00 with Lee Park (telehealth)\n"
    "Which one suits you?"
)
BOOKED = (
    "You're booked: a telehealth appointment with Ana Ruiz on 2026-11-09 at 10:00. Next step: "
    "you'll get a video link before the visit."
)
CONFIRM = "Shall I book Monday 2026-11-09 at 10:00 with Ana Ruiz (telehealth)?"


def say(assistant_lines, *, patient_lines=None, system="s", seed=None, profile=None, story=None):
    """The patient's answer after the assistant said `assistant_lines` in turn (the patient's
    own lines default to placeholders)."""
    profile = EXAMPLE_ENTRY["patient_profile"] | (profile or {})
    seed = SEED | (seed or {})
    patient_lines = patient_lines or [f"(patient line {i})" for i in range(len(assistant_lines))]
    messages = [Message("user", "[open]")]
    for own, heard in zip(patient_lines, assistant_lines, strict=True):
        messages += [Message("assistant", own), Message("user", heard)]
    request = ChatRequest(
        model="offline/patient",
        purpose="patient",
        system=system,
        messages=tuple(messages),
        hints={
            "profile": profile,
            "story": story or EXAMPLE_ENTRY["patient_story"],
            "seed": seed,
            "personality": seed["personality"],
            "turn": 1 + len(assistant_lines),
            "caregiver": bool(profile.get("caregiver")),
        },
    )
    return offline_patient.respond(request, "patient").text


def opening(**changes):
    return say([], **changes)


def question(key):
    return FOLLOW_UPS[key].question


def test_a_caregiver_opens_on_behalf_of_a_child():
    text = opening(
        seed={"age_group": "pediatric"},
        profile={
            "first_name": "Leo",
            "preferred_name": "Leo",
            "pronouns": "he/him",
            "caregiver": {"name": "Ana Lopez", "relationship": "mother"},
        },
    )
    assert text.startswith("Hi. I'm Ana Lopez, Leo's mother.")
    assert "about his type 2 diabetes" in text


def test_personality_shapes_the_scripted_wording():
    terse = opening(seed={"personality": "terse"})
    anxious = opening(seed={"personality": "anxious"})
    assert len(terse) < len(anxious)
    assert "worried" in anxious and not terse.startswith("Hi")


def test_the_patient_follows_the_trait_levels_written_in_its_prompt():
    # The same "cooperative" type, re-levelled by a researcher to low cooperation: the patient
    # reads the levels from the prompt it is given, so it now asks why before agreeing.
    shipped = DEFAULT_PATH.read_text(encoding="utf-8")
    edited = shipped.replace(
        "  cooperative:\n    summary: trusting, clear and patient\n    levels:\n"
        "      cooperation: high",
        "  cooperative:\n    summary: trusting, clear and patient\n    levels:\n"
        "      cooperation: low",
    )
    assert edited != shipped
    system = render_patient_system(
        profile=EXAMPLE_ENTRY["patient_profile"],
        story=EXAMPLE_ENTRY["patient_story"],
        seed=SEED,
        now=EXAMPLE_NOW,
        personalities=parse_personalities(edited),
    )
    assert say([CONFIRM]) == "Yes, please go ahead."
    assert say([CONFIRM], system=system) == "Before I agree: why is that the right step for me?"


def test_the_patient_picks_the_visit_type_it_prefers():
    # Cooperative (urgency medium) with a remote preference: one of the two telehealth slots.
    picked = say([OPTIONS])
    assert picked.startswith("I'll take this one:") and "(telehealth)." in picked
    assert picked == say([OPTIONS])


def test_urgency_sets_which_slot_is_taken():
    stoic = say([OPTIONS], seed={"personality": "stoic"})  # urgency low: the latest
    assert stoic == "Tuesday 2026-11-10 at 11:00 with Lee Park (telehealth)."


def test_an_urgent_patient_asks_for_something_sooner_before_choosing():
    sooner = say([OPTIONS], seed={"personality": "anxious"})
    assert sooner == "Is there anything sooner? I really don't want to wait."
    picked = say(
        [OPTIONS, "Those are the earliest open times I can see.\n" + OPTIONS],
        patient_lines=["(opening)", sooner],
        seed={"personality": "anxious"},
    )
    assert "2026-11-09 at 10:00" in picked  # the earliest of the preferred type


def test_low_cooperation_asks_why_once_then_agrees():
    seed = {"personality": "skeptical"}
    why = say([CONFIRM], seed=seed)
    assert why == "Before I agree: why is that the right step for me?"
    again = say([CONFIRM, f"Because it fits. {CONFIRM}"], patient_lines=["(o)", why], seed=seed)
    assert again == "Fine. Go ahead."


def test_the_patient_answers_questions_in_the_first_person_from_the_story():
    # "Over the past week her home blood pressure readings have crept up ..." (the story)
    answer = say(["What symptoms should the specialist look at?"])
    assert answer.startswith("For the past week, my home blood pressure readings have crept up")
    story = "Sam is 8. Over the past three days Sam has had a barking cough, worse at night."
    self_voice = say(["When did it start?"], story=story)
    assert self_voice == "It started about three days ago."
    caregiver = say(
        ["What symptoms have you noticed?"],
        story=story,
        profile={"preferred_name": "Sam", "caregiver": {"name": "Ana", "relationship": "mother"}},
    )
    assert caregiver == "Sam has had a barking cough for the past three days."


def test_follow_up_questions_follow_the_personality():
    symptoms = {"task_category": "medication", "task_subcategory": "medication_interaction"}

    def first_follow_up(personality):
        return say([BOOKED], seed=symptoms | {"personality": personality})

    assert first_follow_up("cooperative") == question("worse")
    assert first_follow_up("anxious") == question("serious")
    assert first_follow_up("skeptical") == question("proof")
    assert first_follow_up("stoic") == question("worse")  # calm: no "is it serious?"
    said = ["(o)", question("serious")]
    answered = "It's understandable to be worried; here are the warning signs."
    confused = say(
        [BOOKED, answered], patient_lines=said, seed=symptoms | {"personality": "confused"}
    )
    assert confused == question("plain")  # low health literacy


def test_patience_sets_how_many_follow_ups_are_asked_before_thanks():
    def follow_ups_until_thanks(personality):
        heard, said = [BOOKED], ["(opening)"]
        while True:
            text = say(heard, patient_lines=said, seed={"personality": personality})
            if text in offline_patient.GOODBYES:
                return len(said) - 1
            said.append(text)
            heard.append("Yes: arrive early, bring your insurance card; you can move or cancel "
                          "it by message, and it's saved under reference appt-1.")  # fmt: skip

    assert follow_ups_until_thanks("terse") == 1
    assert follow_ups_until_thanks("cooperative") == 2  # only two questions fit a booking


def test_an_unanswered_question_is_asked_once_more_then_the_patient_wants_a_person():
    asked = question("prepare")
    vague = "Everything is taken care of."
    re_asked = say([BOOKED, vague], patient_lines=["(o)", asked], seed={"personality": "confused"})
    assert re_asked == f"Sorry, that doesn't really answer it. {asked}"
    person = say(
        [BOOKED, vague, vague],
        patient_lines=["(o)", asked, re_asked],
        seed={"personality": "confused"},
    )
    assert person == question("human")
    leaves = say(
        [BOOKED, vague, vague, vague],
        patient_lines=["(o)", asked, re_asked, person],
        seed={"personality": "confused"},
    )
    assert leaves in offline_patient.GOODBYES[3:]


def test_a_booking_claimed_without_a_time_or_type_is_questioned():
    claim = ["All done! I've booked you an appointment for 2026-11-05."]
    assert say(claim) == question("details")
    details = question("details")
    kind = say(claim + ["You'll get the details by email."], patient_lines=["(o)", details])
    assert kind.endswith(question("details"))  # re-asked once first
    typed = say(claim + ["It's with Ana Ruiz at 10:00."], patient_lines=["(o)", details])
    assert typed == "Is that a video or phone visit, like I asked?"


def test_a_severe_concern_may_carry_a_red_flag_that_is_mentioned_when_asked():
    seed = {"task_category": "health_concern", "task_subcategory": "symptom_assessment",
            "severity": "severe"}  # fmt: skip
    flagged = [
        name
        for name in ("Maria", "Ana", "Sam", "Lee", "Noor", "Jo")
        if "Also, "
        in say(
            ["Do you have any fever, chest pain or trouble breathing?"],
            seed=seed,
            profile={"first_name": name},
        )  # fmt: skip
    ]
    assert 0 < len(flagged) < 6  # about half of them
    calm = say(["Do you have any fever, chest pain or trouble breathing?"])  # moderate
    assert calm == "No, nothing like that."


def test_the_patient_thanks_once_then_sends_the_token():
    thanks = offline_patient.THANKS
    assert say([BOOKED, "You're welcome."], patient_lines=["(o)", thanks]) == TERMINATION_TOKEN
