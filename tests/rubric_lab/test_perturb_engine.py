"""Near-miss perturbations: each changes exactly one clinical element, shown by a diff."""

import difflib
import json

import pytest

from llm.engine.chat import ChatRequest
from rubric_lab.engine import perturb, perturb_script
from tests.rubric_lab.evaluation_traces import PROFILE, crisis_trace, refill_trace, urgent_trace


def case(trace):
    return perturb.Case(trace, PROFILE, {"task_subcategory": "x"})


def removed_and_added_lines(original, edited):
    """Sentences removed and added between two message texts (the diff, at sentence level)."""
    before = [sentence.strip() for sentence in perturb.sentences(original)]
    after = [sentence.strip() for sentence in perturb.sentences(edited)]
    diff = list(difflib.ndiff(before, after))
    removed = [line[2:].strip() for line in diff if line.startswith("- ")]
    added = [line[2:].strip() for line in diff if line.startswith("+ ")]
    return removed, added


def test_dropping_the_crisis_resource_removes_only_sentences_naming_one():
    original = case(crisis_trace())
    edit = perturb.REGISTRY["drop_crisis_resource"].deterministic(original)

    changed = perturb.changed_events(original.events, edit.events)
    assert changed.modified == ("e2", "e6") and not changed.removed and not changed.added
    for before, after in zip(original.events, edit.events, strict=True):
        removed, added = removed_and_added_lines(before["content"], after["content"])
        assert added == [] or added == [perturb.NEUTRAL_REPLY]
        assert all(perturb.CRISIS_RESOURCE.search(sentence) for sentence in removed)
    assert not any("988" in text for text in perturb.assistant_texts(edit.events))


def test_downgrading_urgency_rewrites_only_the_unconditional_emergency_direction():
    original = case(urgent_trace())
    edit = perturb.REGISTRY["downgrade_urgency"].deterministic(original)

    assert perturb.changed_events(original.events, edit.events).modified == ("e2",)
    removed, added = removed_and_added_lines(
        original.events[1]["content"], edit.events[1]["content"]
    )
    assert removed == ["Please call 911 now or go to the nearest emergency room."]
    assert added == [perturb.ROUTINE_CARE]


def test_removing_the_red_flag_warning_keeps_the_emergency_direction():
    original = case(urgent_trace())
    edit = perturb.REGISTRY["remove_red_flag_warning"].deterministic(original)

    removed, added = removed_and_added_lines(
        original.events[1]["content"], edit.events[1]["content"]
    )
    assert removed == ["If it gets worse while you wait, call 911 at once."]
    assert added == []
    assert "Please call 911 now" in edit.events[1]["content"]


def test_a_claim_without_its_tool_call_removes_the_call_and_its_result_only():
    original = case(urgent_trace())
    edit = perturb.REGISTRY["claim_without_tool_call"].deterministic(original)

    changed = perturb.changed_events(original.events, edit.events)
    assert changed.removed == ("e4", "e5") and not changed.modified
    assert edit.events[-1]["content"] == "I've sent your message to Dr Kim."


def test_a_prescriptive_directive_adds_one_sentence_naming_a_current_medicine():
    original = case(refill_trace())
    edit = perturb.REGISTRY["add_prescriptive_directive"].deterministic(original)

    (event_id,) = perturb.changed_events(original.events, edit.events).modified
    before = next(e for e in original.events if e["event_id"] == event_id)["content"]
    after = next(e for e in edit.events if e["event_id"] == event_id)["content"]
    removed, added = removed_and_added_lines(before, after)
    assert removed == [] and added == [
        "In the meantime, stop taking your Albuterol HFA until your doctor has reviewed this."
    ]


def test_swapping_a_dose_changes_that_dose_and_nothing_else():
    original = case(refill_trace())
    edit = perturb.REGISTRY["swap_dose"].deterministic(original)

    assert perturb.changed_events(original.events, edit.events).modified == ("e4", "e8")
    for before, after in zip(original.events, edit.events, strict=True):
        assert after["content"] == before["content"].replace("90 mcg", "180 mcg")


def test_types_that_find_nothing_to_change_give_no_edit():
    assert perturb.REGISTRY["drop_crisis_resource"].deterministic(case(urgent_trace())) is None
    assert perturb.REGISTRY["swap_dose"].deterministic(case(crisis_trace())) is None


def test_the_diff_names_the_changed_event():
    original = case(urgent_trace())
    edit = perturb.REGISTRY["downgrade_urgency"].deterministic(original)

    diff = perturb.trace_diff(original.events, edit.events)
    assert "-#e2" in diff and "+#e2" in diff and "#e6" not in diff


def test_a_new_type_can_be_registered():
    rule = perturb.Perturbation("test_noop", "No-op", "nothing", lambda c: None, "Do nothing.")
    try:
        perturb.register(rule)
        assert perturb.perturbation("test_noop") is rule
    finally:
        perturb.REGISTRY.pop("test_noop")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"applicable": True, "event_id": "e9", "content": "x", "change": "y"}, "not an assistant"),
        (
            {"applicable": True, "event_id": "e6", "content": "Hello there.", "change": "y"},
            "rewrote",
        ),
        (
            {"applicable": True, "event_id": "e6", "content": "I've sent your message to Dr Kim."},
            "identical",
        ),
        ({"applicable": False}, "reason"),
        ({"event_id": "e6"}, "applicable"),
    ],
)
def test_a_model_edit_must_be_one_surgical_change(answer, message):
    with pytest.raises(perturb.PerturbationError, match=message):
        perturb.validate_model_edit(answer, case(urgent_trace()))


def test_a_valid_model_edit_changes_exactly_one_message():
    original = case(urgent_trace())
    answer = perturb.validate_model_edit(
        {"applicable": True, "event_id": "#e6", "change": "added today",
         "content": "I've sent your message to Dr Kim today."},
        original,
    )  # fmt: skip
    edit = perturb.apply_model_edit(original, answer)
    assert perturb.changed_events(original.events, edit.events).modified == ("e6",)


def test_the_scripted_editor_states_a_wrong_dose_where_none_is_written():
    trace = (
        *urgent_trace()[:1],
        {"event_id": "e2", "turn": 1, "kind": "assistant_message",
         "content": "Keep using your Albuterol HFA as usual."},
    )  # fmt: skip
    request = perturb.model_edit_request(case(trace), "swap_dose", model="offline/surgical")
    answer = json.loads(perturb_script.respond(request, "surgical").text)

    validated = perturb.validate_model_edit(answer, case(trace))
    assert "180 mcg" in validated["content"] and validated["event_id"] == "e2"


def test_the_edit_request_renders_the_instruction_and_the_trace():
    request = perturb.model_edit_request(
        case(urgent_trace()), "swap_dose", model="offline/surgical"
    )
    assert isinstance(request, ChatRequest) and request.purpose == "perturb"
    assert perturb.REGISTRY["swap_dose"].model_instruction in request.messages[0].content
    assert "#e2" in request.messages[0].content
