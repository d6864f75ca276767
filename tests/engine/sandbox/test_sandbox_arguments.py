"""Whatever arrives as a tool call, the agent gets a clear error and the state is untouched."""

import json

import pytest

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.examples import EXAMPLE_NOW, EXAMPLE_PROFILE, EXAMPLE_ROSTER


def refused(sandbox, name, arguments):
    before = sandbox.state_hash()
    result = sandbox.call(name, arguments)
    assert not result.ok and result.write_action is None
    assert sandbox.state_hash() == before
    return json.loads(result.content)["error"]


def test_an_unknown_tool_is_refused_listing_the_valid_tools(sandbox):
    result = sandbox.call("book_flight", {})
    content = json.loads(result.content)
    assert not result.ok and "book_flight" in content["error"]
    assert len(content["valid_tools"]) == 15 and "request_refill" in content["valid_tools"]


def test_a_tool_name_that_is_not_a_string_is_refused(sandbox):
    assert "no tool" in refused(sandbox, None, {})


def test_arguments_may_arrive_as_json_text(sandbox):
    result = sandbox.call("request_refill", '{"medication_name": "metformin"}')
    assert result.ok and result.write_action["medication"] == "Metformin"


@pytest.mark.parametrize("raw", ["", "   ", None, "{}"])
def test_empty_arguments_mean_no_arguments(sandbox, raw):
    assert sandbox.call("list_appointments", raw).ok


@pytest.mark.parametrize(
    "raw", ['{"medication_name": "metformin"', "not json", "[1, 2]", "42", "[" * 5000 + "]" * 5000]
)
def test_malformed_json_arguments_are_refused(sandbox, raw):
    assert "JSON" in refused(sandbox, "request_refill", raw)


def test_arguments_of_the_wrong_kind_are_refused(sandbox):
    assert "JSON object" in refused(sandbox, "request_refill", ["metformin"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"medication_name": 42}, "must be a string, not a number"),
        ({"medication_name": True}, "not a boolean"),
        ({"medication_name": ["metformin"]}, "not a list"),
        ({"medication_name": {"name": "x"}}, "not an object"),
        ({"medication_name": ""}, "is required"),
        ({}, "is required"),
        ({"medication_name": None}, "is required"),
        ({"medication_name": "metformin", "dose": "2"}, "Unknown argument(s): dose"),
    ],
)
def test_wrong_argument_types_are_refused_by_name(sandbox, arguments, message):
    assert message in refused(sandbox, "request_refill", arguments)


def test_a_100_kb_string_is_refused_without_echoing_it(sandbox):
    huge = "a" * 100_000
    error = refused(sandbox, "request_refill", {"medication_name": huge})
    assert "limit is 2000" in error and len(error) < 500
    error = refused(sandbox, "request_refill", json.dumps({"medication_name": huge}))
    assert "limit is 20000" in error


def test_long_text_in_error_messages_is_truncated(sandbox):
    error = refused(sandbox, "update_pcp", {"doctor": "x" * 1_500})
    assert len(error) < 300


def test_optional_empty_strings_count_as_omitted(sandbox):
    result = sandbox.call("list_doctors", {"specialty": ""})
    assert result.ok and len(json.loads(result.content)["doctors"]) == 12


def test_a_list_argument_rejects_non_string_items(sandbox):
    error = refused(
        sandbox,
        "message_pcp",
        {"reason": "r", "message": "m", "urgency": "routine", "relevant_medications": ["a", 3]},
    )
    assert "relevant_medications[1]" in error


def test_a_list_argument_caps_its_length(sandbox):
    error = refused(
        sandbox,
        "message_pcp",
        {"reason": "r", "message": "m", "urgency": "routine", "relevant_medications": ["a"] * 21},
    )
    assert "at most 20" in error


def test_an_unexpected_internal_failure_becomes_an_error_result(sandbox):
    sandbox.providers_by_id.clear()  # corrupt the index so a lookup inside the tool fails
    result = sandbox.call("list_doctors", {})
    assert result.ok
    result = sandbox.call(
        "get_available_appointments", {"start_date": "2026-11-05", "end_date": "2026-11-06"}
    )
    assert not result.ok and "failed unexpectedly" in json.loads(result.content)["error"]


def test_a_doctor_name_shared_by_two_clinicians_needs_an_id():
    roster = {
        **EXAMPLE_ROSTER,
        "providers": [
            *EXAMPLE_ROSTER["providers"],
            {
                "id": "dr-13",
                "name": "Ravi Patel",
                "specialty": "Neurology",
                "credentials": "MD",
                "office_id": "office-4",
            },
        ],
    }
    sandbox = Sandbox.build(EXAMPLE_PROFILE, roster, 1, EXAMPLE_NOW)
    result = sandbox.call("join_virtual_call_queue", {"doctor": "Dr. Patel"})
    content = json.loads(result.content)
    assert not result.ok and {c["id"] for c in content["candidates"]} == {"dr-01", "dr-13"}
    assert sandbox.call("join_virtual_call_queue", {"doctor": "Dr. Ravi Patel, MD"}).ok
