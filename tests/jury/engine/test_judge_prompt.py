import inspect
import re
from dataclasses import fields

import pytest

from jury.engine.prompt import (
    ConversationText,
    PromptTemplateError,
    parse_judge_template,
    prompt_hash,
    render_conversation,
    render_judge_prompt,
    render_judge_prompt_for,
)
from jury.engine.rubrics import load_rubrics

MODEL_NAMES = re.compile(
    r"gpt|claude|opus|sonnet|qwen|gemini|llama|mistral|deepseek|openai|anthropic|offline/",
    re.IGNORECASE,
)

PROFILE = {
    "first_name": "Maria",
    "preferred_name": "Maria",
    "age": 65,
    "conditions": ["Type 2 diabetes"],
    "medications": [{"name": "Metformin", "dosage": "500 mg", "status": "active"}],
    "allergies": ["penicillin"],
}
SCENARIO = {
    "story": "Maria has felt dizzy for two days after a dose change and worries about falls.",
    "task_category": "health_concern",
    "task_subcategory": "symptom_assessment",
    "seed_attributes": {"severity": "moderate", "personality": "anxious"},
}
EVENTS = [
    {"event_id": 1, "turn": 1, "kind": "patient_message", "content": "I feel dizzy."},
    {"event_id": 2, "turn": 1, "kind": "reasoning", "content": "SECRET-THOUGHT"},
    {
        "event_id": 3,
        "turn": 1,
        "kind": "tool_call",
        "tool_name": "list_medications",
        "arguments": {"status": "active"},
        "model": "openai/gpt-5.5",
    },
    {
        "event_id": 4,
        "turn": 1,
        "kind": "tool_result",
        "tool_name": "list_medications",
        "ok": True,
        "content": '{"active": ["Metformin 500 mg"]}',
    },
    {"event_id": 5, "turn": 1, "kind": "assistant_message", "content": "When did it start?"},
    {"event_id": 6, "turn": 2, "kind": "error", "content": "anthropic/claude-opus-4.8 timed out"},
]


@pytest.fixture(scope="module")
def rubrics():
    return load_rubrics()


@pytest.fixture(scope="module")
def rendered(rubrics):
    return render_judge_prompt(
        rubrics["clinical_safety"], profile=PROFILE, scenario=SCENARIO, events=EVENTS
    )


def test_the_prompt_contains_every_section_of_the_rubric(rendered, rubrics):
    system, user = rendered
    rubric = rubrics["clinical_safety"]
    for text in (rubric.task, rubric.applicability.rule, *rubric.distinctions):
        assert text in user
    for level in rubric.levels:
        assert level.description in user
    for sub in rubric.sub_dimensions:
        assert sub.name in user
        assert all(criterion in user for criterion in sub.criteria)
    assert all(trigger in user for trigger in rubric.forced_fail)
    assert '"score"' in system and '"explanation"' in user


def test_the_prompt_contains_profile_scenario_and_the_numbered_trace(rendered):
    _, user = rendered
    assert '"allergies": [\n    "penicillin"' in user
    assert SCENARIO["story"] in user
    assert '"task_subcategory": "symptom_assessment"' in user
    assert '"personality": "anxious"' in user
    assert "#1 [turn 1] Patient: I feel dizzy." in user
    assert '#3 [turn 1] Tool call list_medications: {"status": "active"}' in user
    assert "#4 [turn 1] Tool result list_medications (ok)" in user
    assert "#5 [turn 1] Assistant: When did it start?" in user


def test_reasoning_events_are_not_shown_to_judges(rendered):
    assert "SECRET-THOUGHT" not in "".join(rendered)
    assert "#2 " not in rendered[1]


def test_no_model_identity_reaches_the_judge_even_from_event_fields(rendered):
    assert not MODEL_NAMES.search("".join(rendered))


def test_every_dimension_renders_and_realism_rubrics_refuse(rubrics):
    for rubric in rubrics.values():
        if rubric.judged:
            system, user = render_judge_prompt(
                rubric, profile=PROFILE, scenario=SCENARIO, events=EVENTS
            )
            assert rubric.name in system and not MODEL_NAMES.search(system + user)
        else:
            with pytest.raises(ValueError, match="clinicians"):
                render_judge_prompt(rubric, profile=PROFILE, scenario=SCENARIO, events=EVENTS)


def test_a_failed_tool_result_and_raw_arguments_are_shown_as_such(rubrics):
    events = [
        {"event_id": 9, "turn": 3, "kind": "tool_call", "tool_name": "request_refill",
         "arguments": '{"medication_name": "Metf'},
        {"event_id": 10, "turn": 3, "kind": "tool_result", "tool_name": "request_refill",
         "ok": False, "content": "No refills remaining."},
    ]  # fmt: skip
    _, user = render_judge_prompt(
        rubrics["workflow_accuracy"], profile=PROFILE, scenario=SCENARIO, events=events
    )
    assert '#9 [turn 3] Tool call request_refill: {"medication_name": "Metf' in user
    assert "#10 [turn 3] Tool result request_refill (error): No refills remaining." in user


def test_prompt_hash_changes_with_either_part_and_not_at_the_boundary():
    assert prompt_hash("ab", "c") != prompt_hash("a", "bc")
    assert prompt_hash("s", "u") == prompt_hash("s", "u")
    assert len(prompt_hash("s", "u")) == 64


def test_a_template_with_an_unknown_placeholder_is_rejected():
    with pytest.raises(PromptTemplateError, match="model_name"):
        parse_judge_template("<!-- system -->\nYou judge $model_name\n<!-- user -->\n$trace")


def test_a_template_without_the_user_marker_is_rejected():
    with pytest.raises(PromptTemplateError, match="user"):
        parse_judge_template("<!-- system -->\nYou judge.\n$trace")


def test_the_renderer_cannot_be_given_a_model_or_agent():
    parameters = set(inspect.signature(render_judge_prompt).parameters)
    assert parameters == {"rubric", "profile", "scenario", "events", "template"}
    assert set(inspect.signature(render_conversation).parameters) == {
        "profile",
        "scenario",
        "events",
    }
    assert set(inspect.signature(render_judge_prompt_for).parameters) == {
        "rubric",
        "conversation",
        "template",
    }
    assert {field.name for field in fields(ConversationText)} == {"profile", "scenario", "trace"}


def test_a_conversation_rendered_once_gives_every_rubric_the_same_prompt_as_rendering_anew(
    rubrics,
):
    conversation = render_conversation(profile=PROFILE, scenario=SCENARIO, events=EVENTS)
    for rubric in (rubric for rubric in rubrics.values() if rubric.judged):
        assert render_judge_prompt_for(rubric, conversation=conversation) == render_judge_prompt(
            rubric, profile=PROFILE, scenario=SCENARIO, events=EVENTS
        )


def test_an_empty_last_patient_message_reads_as_the_patient_leaving():
    from jury.engine.prompt import render_trace

    events = [
        {"event_id": "e0001", "turn": 1, "kind": "patient_message", "content": "Hi"},
        {"event_id": "e0002", "turn": 1, "kind": "assistant_message", "content": "Booked."},
        {"event_id": "e0003", "turn": 2, "kind": "patient_message", "content": ""},
    ]
    assert render_trace(events).splitlines()[-1] == (
        "#e0003 [turn 2] Patient: (left the conversation)"
    )


def test_the_rubric_opens_the_user_part_and_is_marked_stable_for_prompt_caching():
    from jury.engine.prompt import stable_user_prefix

    rubric = load_rubrics()["clinical_safety"]
    first = render_judge_prompt(rubric, profile={"a": 1}, scenario={"story": "one"}, events=[])
    second = render_judge_prompt(rubric, profile={"b": 2}, scenario={"story": "two"}, events=[])
    prefix = stable_user_prefix(rubric)

    assert first[0] == second[0]  # the instructions: the same for every call
    assert first[1][:prefix] == second[1][:prefix]
    assert first[1][prefix:].startswith('{\n  "a": 1') and second[1][prefix:].startswith('{\n  "b"')
    assert "Critical failures" in first[1][:prefix] and '"a": 1' not in first[1][:prefix]


def test_the_case_opens_the_user_part_after_the_rubric_and_before_the_trace():
    from jury.engine.prompt import case_user_prefix, stable_user_prefix

    rubric = load_rubrics()["clinical_safety"]
    case = {"profile": {"a": 1}, "scenario": {"story": "one"}}
    agents = [
        render_conversation(**case, events=[{"event_id": "e1", "turn": 1, "kind": kind,
                                             "content": text}])
        for kind, text in (("patient_message", "Hi"), ("assistant_message", "Booked."))
    ]  # fmt: skip
    prompts = [render_judge_prompt_for(rubric, conversation=text)[1] for text in agents]
    case_prefix = case_user_prefix(rubric, agents[0])

    assert case_prefix == case_user_prefix(rubric, agents[1]) > stable_user_prefix(rubric)
    assert prompts[0][:case_prefix] == prompts[1][:case_prefix]  # every agent of the case
    assert '"a": 1' in prompts[0][:case_prefix] and "Story: one" in prompts[0][:case_prefix]
    assert prompts[0][case_prefix:].startswith("#e1 [turn 1] Patient: Hi")
