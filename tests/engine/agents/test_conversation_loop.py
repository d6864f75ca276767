import re
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from benchmark.engine.agents.loop import (
    TraceEvent,
    events_to_dicts,
    parse_tool_arguments,
    split_reasoning,
)
from benchmark.engine.agents.prompts import TERMINATION_TOKEN
from benchmark.engine.sandbox.examples import build_example_sandbox
from llm.engine.chat import ChatResponse, ProviderError, ToolCall
from llm.engine.providers.redaction import UNEXPECTED_FAILURE
from tests.engine.agents.fakes import FakeSandbox, ScriptedClient, calls, play, says


def patient_saying(*lines: str) -> ScriptedClient:
    """A patient that says each line in turn and then repeats the last one."""
    return ScriptedClient(lambda request, n: says(lines[min(n, len(lines)) - 1]))


def kinds(outcome) -> list[str]:
    return [event.kind for event in outcome.events]


def test_a_token_in_the_opening_message_ends_before_any_assistant_turn(case, baseline, now):
    assistant = ScriptedClient(lambda request, n: says("never called"))
    outcome = play(
        case, baseline, now, patient=patient_saying(TERMINATION_TOKEN), assistant=assistant
    )
    assert outcome.termination_reason == "patient_ended"
    assert outcome.assistant_turns == 0
    assert assistant.requests == []
    assert [(e.kind, e.content) for e in outcome.events] == [("patient_message", "")]


def test_the_token_is_stripped_from_the_stored_patient_message(case, baseline, now):
    patient = patient_saying("I need an appointment.", f"Thanks! {TERMINATION_TOKEN}")
    outcome = play(
        case, baseline, now, patient=patient, assistant=ScriptedClient(lambda r, n: says("Booked."))
    )
    assert outcome.termination_reason == "patient_ended"
    assert outcome.assistant_turns == 1
    assert outcome.events[-1].content == "Thanks!"


def test_a_patient_that_never_ends_hits_the_cap_after_15_assistant_turns(case, baseline, now):
    patient = patient_saying("Hello?")
    assistant = ScriptedClient(lambda r, n: says(f"Answer {n}."))
    outcome = play(case, baseline, now, patient=patient, assistant=assistant)
    assert outcome.termination_reason == "turn_cap"
    assert outcome.assistant_turns == 15
    assert len(assistant.requests) == 15
    assert len(patient.requests) == 15  # the opening plus 14 replies
    assert outcome.events[-1].content == "Answer 15."
    assert outcome.events[-1].turn == 15


def test_a_smaller_turn_cap_is_respected(case, baseline, now):
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi"),
        assistant=ScriptedClient(lambda r, n: says("Ok.")),
        max_turns=3,
    )
    assert (outcome.termination_reason, outcome.assistant_turns) == ("turn_cap", 3)


def test_a_provider_error_mid_conversation_keeps_every_event_so_far(case, baseline, now):
    def assistant_answer(request, n):
        if n == 2:
            raise ProviderError("upstream returned 503", kind="server", status=503)
        return says("First answer.")

    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi", "And then?"),
        assistant=ScriptedClient(assistant_answer),
    )
    assert outcome.termination_reason == "provider_error"
    assert (
        "assistant model call failed: provider error (server): upstream returned 503"
        in outcome.error
    )
    assert kinds(outcome) == ["patient_message", "assistant_message", "patient_message", "error"]
    assert outcome.events[-1].model_role == "assistant"
    assert outcome.assistant_turns == 1


def test_a_patient_provider_error_is_reported_against_the_patient(case, baseline, now):
    def patient_answer(request, n):
        raise ProviderError("bad key", kind="auth")

    outcome = play(
        case,
        baseline,
        now,
        patient=ScriptedClient(patient_answer),
        assistant=ScriptedClient(lambda r, n: says("x")),
    )
    assert outcome.termination_reason == "provider_error"
    assert outcome.error == "patient model call failed: provider error (auth): bad key"
    assert [(e.kind, e.model_role) for e in outcome.events] == [("error", "patient")]


def test_malformed_json_and_unknown_tools_become_tool_errors_the_model_sees(case, baseline, now):
    script = {
        1: calls(("get_profile", '{"broken": ')),
        2: calls(("teleport_patient", "{}")),
        3: says("Sorry about that, here is your answer."),
    }
    assistant = ScriptedClient(lambda r, n: script[n])
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi", TERMINATION_TOKEN),
        assistant=assistant,
        sandbox=build_example_sandbox(),
        tools=None,
    )
    results = [e for e in outcome.events if e.kind == "tool_result"]
    assert [(r.tool_name, r.ok) for r in results] == [
        ("get_profile", False),
        ("teleport_patient", False),
    ]
    assert "teleport_patient" in results[1].content
    tool_calls = [e for e in outcome.events if e.kind == "tool_call"]
    assert tool_calls[0].arguments == '{"broken": '
    fed_back = assistant.requests[1].messages[-1]
    assert (fed_back.role, fed_back.content) == ("tool", results[0].content)
    assert outcome.termination_reason == "patient_ended"
    assert outcome.events[-2].content == "Sorry about that, here is your answer."


def test_the_real_tool_specs_are_offered_by_default(case, baseline, now):
    assistant = ScriptedClient(lambda r, n: says("Hello."))
    play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi", TERMINATION_TOKEN),
        assistant=assistant,
        sandbox=build_example_sandbox(),
        tools=None,
    )
    assert len(assistant.requests[0].tools) == 15


def test_several_tool_calls_in_one_response_run_in_order(case, baseline, now):
    script = {1: calls(("book", '{"slot": "s1"}'), ("echo", '{"x": 1}')), 2: says("Done.")}
    sandbox = FakeSandbox()
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Book", TERMINATION_TOKEN),
        assistant=ScriptedClient(lambda r, n: script[n]),
        sandbox=sandbox,
    )
    assert sandbox.calls == [("book", {"slot": "s1"}), ("echo", {"x": 1})]
    assert kinds(outcome)[1:5] == ["tool_call", "tool_result", "tool_call", "tool_result"]
    assert outcome.sandbox.write_actions == [{"tool": "book", "action": "booked", "slot": "s1"}]


def test_tool_results_are_paired_with_their_calls_even_without_ids(case, baseline, now):
    nameless = ChatResponse(text="", tool_calls=(ToolCall("", "echo", "{}"),) * 2)
    script = {1: nameless, 2: says("Done.")}
    assistant = ScriptedClient(lambda r, n: script[n])
    outcome = play(
        case, baseline, now, patient=patient_saying("Hi", TERMINATION_TOKEN), assistant=assistant
    )
    ids = [e.tool_call_id for e in outcome.events if e.kind == "tool_call"]
    assert len(set(ids)) == 2 and all(ids)
    fed_back = [m.tool_call_id for m in assistant.requests[1].messages if m.role == "tool"]
    assert fed_back == ids


def test_reasoning_is_recorded_but_never_shown_to_the_patient(case, baseline, now):
    answer = says("<think>private plan</think>Here is what I suggest.", reasoning="model notes")
    patient = patient_saying("Hi", TERMINATION_TOKEN)
    outcome = play(
        case, baseline, now, patient=patient, assistant=ScriptedClient(lambda r, n: answer)
    )
    seen = [m.content for m in patient.requests[1].messages]
    assert seen[-1] == "Here is what I suggest."
    assert not any("private plan" in text or "model notes" in text for text in seen)
    reasoning = [e for e in outcome.events if e.kind == "reasoning"]
    assert reasoning[0].content == "model notes\n\nprivate plan"
    assert reasoning[0].model_role == "assistant"


def test_narration_that_comes_with_tool_calls_is_not_shown_to_the_patient(case, baseline, now):
    script = {1: calls(("echo", "{}"), text="Let me look that up."), 2: says("Found it.")}
    patient = patient_saying("Hi", TERMINATION_TOKEN)
    outcome = play(
        case, baseline, now, patient=patient, assistant=ScriptedClient(lambda r, n: script[n])
    )
    assert [m.content for m in patient.requests[1].messages][-1] == "Found it."
    assert outcome.events[1].kind == "reasoning"
    assert outcome.events[1].content == "Let me look that up."


def test_the_patient_sees_the_assistant_in_the_user_role(case, baseline, now):
    patient = patient_saying("I need help.", TERMINATION_TOKEN)
    play(case, baseline, now, patient=patient, assistant=ScriptedClient(lambda r, n: says("Sure.")))
    roles = [(m.role, m.content) for m in patient.requests[1].messages]
    assert roles[1:] == [("assistant", "I need help."), ("user", "Sure.")]
    assert roles[0][0] == "user"  # the neutral opening cue
    assert patient.requests[0].tools == ()
    assert patient.requests[0].purpose == "patient"


def test_both_sides_share_one_timestamp(case, baseline, now):
    patient = patient_saying("Hi", TERMINATION_TOKEN)
    assistant = ScriptedClient(lambda r, n: says("Hello."))
    outcome = play(case, baseline, now, patient=patient, assistant=assistant)
    stamp = "Wednesday, 2026-11-04 09:30"
    assert stamp in patient.requests[0].system and stamp in assistant.requests[0].system
    assert outcome.patient_system == patient.requests[0].system
    assert case.story.strip() not in assistant.requests[0].system


def test_hints_carry_case_facts_but_never_model_identity(case, baseline, now):
    patient = patient_saying("Hi", TERMINATION_TOKEN)
    assistant = ScriptedClient(lambda r, n: says("Hello."))
    play(case, baseline, now, patient=patient, assistant=assistant)
    patient_hints = patient.requests[1].hints
    assert set(patient_hints) == {"profile", "story", "seed", "personality", "turn", "caregiver"}
    assert (patient_hints["turn"], patient_hints["caregiver"]) == (2, False)
    assert set(assistant.requests[0].hints) == {"profile", "turn", "now"}
    for request in patient.requests + assistant.requests:
        assert "test/" not in repr(request.hints)


def test_cancellation_is_checked_before_each_model_call(case, baseline, now):
    assistant = ScriptedClient(lambda r, n: says("Hello."))
    patient = patient_saying("Hi")
    outcome = play(
        case,
        baseline,
        now,
        patient=patient,
        assistant=assistant,
        should_stop=lambda: len(patient.requests) + len(assistant.requests) >= 3,
    )
    assert outcome.termination_reason == "cancelled"
    assert outcome.error == ""
    assert kinds(outcome) == ["patient_message", "assistant_message", "patient_message"]


def test_an_empty_answer_after_tool_rounds_is_an_agent_error(case, baseline, now):
    script = {1: calls(("echo", "{}")), 2: says("<think>hmm</think>  ")}
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi"),
        assistant=ScriptedClient(lambda r, n: script[n]),
    )
    assert outcome.termination_reason == "agent_error"
    assert outcome.error == "the assistant returned an empty answer"
    assert kinds(outcome)[-1] == "error"


def test_endless_tool_calls_stop_at_the_round_limit(case, baseline, now):
    sandbox = FakeSandbox()
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi"),
        sandbox=sandbox,
        assistant=ScriptedClient(lambda r, n: calls(("echo", "{}"))),
        max_tool_rounds_per_turn=3,
    )
    assert outcome.termination_reason == "agent_error"
    assert "after 3 tool rounds" in outcome.error
    assert len(sandbox.calls) == 3


def test_an_unexpected_exception_ends_the_conversation_instead_of_propagating(
    case, baseline, now, caplog
):
    class BrokenSandbox(FakeSandbox):
        def call(self, name, arguments):
            raise RuntimeError("disk on fire")

    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi"),
        sandbox=BrokenSandbox(),
        assistant=ScriptedClient(lambda r, n: calls(("echo", "{}"))),
    )
    assert outcome.termination_reason == "agent_error"
    # People read a plain sentence; the exception and its traceback are in the log.
    assert outcome.error == UNEXPECTED_FAILURE
    assert "RuntimeError: disk on fire" in caplog.text and "Traceback" in caplog.text
    assert kinds(outcome) == ["patient_message", "tool_call", "error"]


def test_an_unknown_personality_is_an_agent_error_with_no_model_call(case, baseline, now):
    odd_case = case.__class__(
        profile=case.profile, story=case.story, seed=case.seed | {"personality": "grumpy"}
    )
    patient = patient_saying("Hi")
    outcome = play(
        odd_case, baseline, now, patient=patient, assistant=ScriptedClient(lambda r, n: says("x"))
    )
    assert outcome.termination_reason == "agent_error"
    assert "grumpy" in outcome.error
    assert patient.requests == []


def test_usage_is_totalled_per_role_and_an_unknown_price_stays_unknown(case, baseline, now):
    assistant = ScriptedClient(lambda r, n: says("Priced elsewhere.", cost=None))
    outcome = play(
        case, baseline, now, patient=patient_saying("Hi", TERMINATION_TOKEN), assistant=assistant
    )
    assert outcome.usage["patient"] == {
        "calls": 2,
        "input_tokens": 20,
        "output_tokens": 0 + len(TERMINATION_TOKEN) // 4,
        "cost_usd": Decimal("0.002"),
    }
    assert outcome.usage["assistant"]["calls"] == 1
    assert outcome.usage["assistant"]["cost_usd"] is None


def test_each_model_call_is_accounted_on_exactly_one_event(case, baseline, now):
    script = {1: calls(("echo", "{}"), ("echo", "{}")), 2: says("Done.")}
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi", TERMINATION_TOKEN),
        assistant=ScriptedClient(lambda r, n: script[n]),
    )
    charged = [e.kind for e in outcome.events if e.cost_usd is not None]
    assert charged == ["patient_message", "tool_call", "assistant_message", "patient_message"]
    assert sum(e.input_tokens for e in outcome.events) == sum(
        totals["input_tokens"] for totals in outcome.usage.values()
    )


def test_on_event_receives_every_event_in_order(case, baseline, now):
    seen: list[TraceEvent] = []
    outcome = play(
        case,
        baseline,
        now,
        patient=patient_saying("Hi", TERMINATION_TOKEN),
        assistant=ScriptedClient(lambda r, n: says("Hello.")),
        on_event=seen.append,
    )
    assert seen == outcome.events


def test_event_ids_are_sequential_and_the_same_on_a_rerun(case, baseline, now):
    def run():
        script = {1: calls(("echo", '{"a": 1}')), 2: says("Done."), 3: says("Bye.")}
        return play(
            case,
            baseline,
            now,
            patient=patient_saying("Hi", "More", TERMINATION_TOKEN),
            assistant=ScriptedClient(lambda r, n: script[n]),
        )

    first, second = run(), run()
    ids = [event.event_id for event in first.events]
    assert ids == [f"e{number:04d}" for number in range(1, len(ids) + 1)]
    assert events_to_dicts(first.events) == events_to_dicts(second.events)


def test_events_serialise_to_plain_dicts():
    event = TraceEvent(
        event_id="e0001", turn=1, kind="tool_call", arguments={"a": 1}, cost_usd=Decimal("0.0125")
    )
    (data,) = events_to_dicts([event])
    assert data["cost_usd"] == "0.0125"
    assert data["arguments"] == {"a": 1}


def test_split_reasoning_handles_unclosed_and_orphan_tags():
    assert split_reasoning("Hi <think>cut off mid") == ("Hi", "cut off mid")
    assert split_reasoning("thinking first</think>Answer") == ("Answer", "thinking first")
    assert split_reasoning("<THINKING>a</THINKING>b") == ("b", "a")


@given(
    st.text(alphabet=st.characters(blacklist_characters="<>")),
    st.text(alphabet=st.characters(blacklist_characters="<>")),
)
def test_a_thinking_block_is_split_off_exactly(visible, thought):
    assert split_reasoning(f"<think>{thought}</think>{visible}") == (
        visible.strip(),
        thought.strip(),
    )


@given(st.lists(st.sampled_from(["<think>", "</think>", "<thinking>", "</THINK>", "a", " b"])))
def test_no_thinking_tag_survives_in_the_visible_text(pieces):
    shown, _ = split_reasoning("".join(pieces))
    assert not re.search(r"</?think(ing)?>", shown, re.IGNORECASE)


def test_tool_arguments_parse_to_dicts_or_stay_raw():
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments("[1, 2]") == "[1, 2]"
    assert parse_tool_arguments("{oops") == "{oops"
