"""The fidelity engine without a database: the answer's validation, the offline reviewer's
rules, the prompt, and the statistics against independent computations."""

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from fidelity.engine import offline_reviewer, stats
from fidelity.engine.kinds import KindsError, default_kinds, parse_kinds
from fidelity.engine.parse import review_validator
from fidelity.engine.review_prompt import ReviewCase, render_transcript, review_request
from llm.engine.structured import InvalidOutput

KINDS = {kind.id for kind in default_kinds()}
STORY = "Three days ago she started coughing at night and the cough has kept her awake since then."


def event(event_id, kind, content=""):
    return {"event_id": event_id, "kind": kind, "content": content}


def hints(*events, termination="patient_ended", traits=None, profile=None):
    return {
        "profile": profile if profile is not None else {"medications": [{"name": "metformin"}]},
        "story": STORY,
        "traits": traits or {},
        "events": list(events),
        "termination_reason": termination,
    }


def kinds_found(h) -> list[tuple[str, str]]:
    return [(f["kind"], f["event"]) for f in offline_reviewer.review(h)]


def test_the_shipped_error_kinds_are_the_five_the_issue_names():
    assert {
        "off_record",
        "scenario_unprompted",
        "speaks_as_assistant",
        "breaks_personality",
        "ends_early",
    } == KINDS


def test_an_error_kinds_file_with_a_repeated_id_is_refused():
    text = "kinds:\n" + "  - {id: a, label: A, description: d}\n" * 2
    with pytest.raises(KindsError, match="used twice"):
        parse_kinds(text)


def test_the_validator_keeps_good_findings_and_drops_duplicates():
    validate = review_validator(kinds=KINDS, patient_events={"e0001", "e0003"})
    finding = {"kind": "ends_early", "event": "[e0003]", "quote": " bye ", "explanation": "Left."}
    assert validate({"findings": [finding, finding]}) == {
        "findings": [
            {"kind": "ends_early", "event": "e0003", "quote": "bye", "explanation": "Left."}
        ]
    }
    assert validate({"findings": []}) == {"findings": []}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({}, "findings"),
        ({"findings": ["x"]}, "not a JSON object"),
        (
            {"findings": [{"kind": "rude", "event": "e0001", "quote": "q", "explanation": "e"}]},
            "kind",
        ),
        (
            {
                "findings": [
                    {"kind": "ends_early", "event": "e0002", "quote": "q", "explanation": "e"}
                ]
            },
            "patient message",
        ),
        ({"findings": [{"kind": "ends_early", "event": "e0001", "quote": "q"}]}, "explanation"),
    ],
)
def test_the_validator_refuses_unusable_answers_with_a_reason(answer, message):
    validate = review_validator(kinds=KINDS, patient_events={"e0001"})
    with pytest.raises(InvalidOutput, match=message):
        validate(answer)


def test_the_offline_reviewer_flags_each_kind_where_it_happens():
    h = hints(
        event("e0001", "patient_message", f"Hi. {STORY}"),
        event("e0002", "assistant_message", "I see. Do you take any medicines?"),
        event("e0003", "patient_message", "I don't take any medicines. How can I help you today?"),
        event("e0004", "assistant_message", "Thanks. When did it start?"),
        event(
            "e0005",
            "patient_message",
            "I'm terrified. The etiology seems idiopathic, maybe tachycardia.",
        ),
        termination="turn_cap",
        traits={"anxiety": "low", "health_literacy": "low"},
    )
    assert kinds_found(h) == [
        ("scenario_unprompted", "e0001"),
        ("off_record", "e0003"),
        ("speaks_as_assistant", "e0003"),
        ("breaks_personality", "e0005"),
        ("breaks_personality", "e0005"),
    ]


def test_a_story_detail_given_when_asked_is_not_flagged():
    h = hints(
        event("e0001", "patient_message", "Hi, I have a cough."),
        event("e0002", "assistant_message", "Since when?"),
        event("e0003", "patient_message", STORY),
        termination="turn_cap",
    )
    assert kinds_found(h) == []


def test_an_allergy_off_the_record_is_flagged_and_one_on_it_is_not():
    profile = {"allergies": ["penicillin"]}
    said = event("e0001", "patient_message", "Allergic to penicillin and bee stings.")
    assert kinds_found(hints(said, termination="turn_cap", profile=profile)) == [
        ("off_record", "e0001")
    ]
    said = event("e0001", "patient_message", "Allergic to penicillin.")
    assert kinds_found(hints(said, termination="turn_cap", profile=profile)) == []


def test_leaving_after_one_answer_is_early_unless_sent_to_emergency_care():
    leaving = (
        event("e0001", "patient_message", "I have chest pain."),
        event("e0002", "assistant_message", "Let me look at the schedule."),
        event("e0003", "patient_message", ""),
    )
    assert kinds_found(hints(*leaving)) == [("ends_early", "e0003")]
    sent = (leaving[0], event("e0002", "assistant_message", "Call 911 now."), leaving[2])
    assert kinds_found(hints(*sent)) == []


def test_the_reviewer_answer_passes_its_own_validation():
    h = hints(event("e0001", "patient_message", "As your assistant, I can book that."))
    case = ReviewCase(
        profile=h["profile"], story=STORY, seed={"task_category": "health_concern"},
        personality="Personality type: calm.", traits={}, events=h["events"],
        termination_reason="patient_ended",
    )  # fmt: skip
    request = review_request(case, model="offline/reviewer", sample="s")
    answer = offline_reviewer.respond(request, "reviewer")
    validate = review_validator(kinds=KINDS, patient_events=case.patient_event_ids)
    import json

    found = validate(json.loads(answer.text))["findings"]
    assert [f["kind"] for f in found] == ["speaks_as_assistant", "ends_early"]
    assert STORY in request.system and "breaks_personality" in request.system
    assert "[e0001] Patient: As your assistant" in request.messages[0].content


def test_the_transcript_leaves_out_hidden_reasoning_and_says_how_it_ended():
    text = render_transcript(
        [event("e0001", "reasoning", "secret plan"), event("e0002", "patient_message", "")],
        "patient_ended",
    )
    assert "secret plan" not in text
    assert text.splitlines() == [
        "[e0002] Patient: (left the conversation)",
        "(The conversation ended: patient ended.)",
    ]


# --- statistics -----------------------------------------------------------------------------


@pytest.mark.parametrize(("successes", "n"), [(0, 7), (3, 10), (10, 10), (41, 57)])
def test_wilson_matches_statsmodels(successes, n):
    low, high = stats.wilson_interval(successes, n)
    expected = proportion_confint(successes, n, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx(expected, abs=1e-12)


def test_with_one_conversation_per_case_the_rate_interval_is_plain_wilson():
    frame = pd.DataFrame(
        {"case": range(10), "flagged": [True] * 3 + [False] * 7, "personality": ["a"] * 10}
    )
    row = stats.fidelity_rates(frame, "personality").loc["a"]
    assert (row["n"], row["faithful"], row["rate"]) == (10, 7, 0.7)
    assert (row["low"], row["high"]) == pytest.approx(
        proportion_confint(7, 10, method="wilson"), abs=1e-12
    )


def test_repetitions_of_one_case_count_as_one_cluster():
    """Four repetitions of five cases, each case all faithful or all flagged: the share is
    worth about five independent conversations, not twenty. By hand: p = 0.6, the clustered
    variance 5/4 * 16 * (2 * 0.6^2 + 3 * 0.4^2) / 20^2 = 0.06, the independent one
    0.24 / 19, so the design effect is 4.75 and the effective n 20 / 4.75."""
    flagged = np.repeat([True, False, False, True, False], 4)
    frame = pd.DataFrame({"case": np.repeat(range(5), 4), "flagged": flagged})
    size = stats.effective_n((~flagged).astype(float), frame["case"])
    assert size == pytest.approx(20 / 4.75)
    row = stats.fidelity_rates(frame).loc["all"]
    assert (row["low"], row["high"]) == pytest.approx(
        proportion_confint(0.6 * size, size, method="wilson"), abs=1e-9
    )
    plain = proportion_confint(12, 20, method="wilson")
    assert row["high"] - row["low"] > plain[1] - plain[0]


def test_a_group_without_conversations_has_no_rate():
    frame = pd.DataFrame({"case": [1], "flagged": [False], "personality": ["a"]})
    assert list(stats.fidelity_rates(frame, "personality").index) == ["a"]


def test_kind_counts_lists_every_kind_in_order():
    findings = pd.DataFrame(
        {"conversation": [1, 1, 2], "kind": ["ends_early", "ends_early", "off_record"]}
    )
    table = stats.kind_counts(findings, ["off_record", "speaks_as_assistant", "ends_early"])
    assert table.to_dict("index") == {
        "off_record": {"findings": 1, "conversations": 1},
        "speaks_as_assistant": {"findings": 0, "conversations": 0},
        "ends_early": {"findings": 2, "conversations": 1},
    }


def test_the_realism_gap_and_its_interval():
    pairs = pd.DataFrame(
        {"flagged": [True, True, False, False, False], "realism": [2, 3, 4, 5, 4.5]}
    )
    result = stats.realism_gap(pairs, resamples=4000)
    assert result["gap"].estimate == pytest.approx(2.5 - 4.5)
    assert result["gap"].low < -2 < result["gap"].high <= -0.5
    assert not stats.realism_gap(pairs.iloc[2:])["gap"].defined


def test_agreement_and_kappa_against_a_hand_count():
    pairs = pd.DataFrame({"flagged": [True, True, False, False], "realism": [1, 4, 5, 2]})
    result = stats.verdict_agreement(pairs)
    assert result["agreement"].estimate == 0.5
    # observed 0.5, chance 0.5 * 0.5 + 0.5 * 0.5 = 0.5: kappa 0
    assert result["kappa"].estimate == pytest.approx(0.0)
    everyone = stats.verdict_agreement(pairs.assign(flagged=False, realism=5))["kappa"]
    assert not everyone.defined and math.isnan(everyone.estimate)
