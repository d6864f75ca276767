import anthropic.types
import openai.types.chat
import openai.types.shared_params
import pytest
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter

from benchmark.engine.sandbox import tool_specs
from benchmark.engine.sandbox.tools import HANDLERS

SPECS = tool_specs()
ARGUMENTS = {
    "list_doctors": {"specialty"},
    "get_available_appointments": {"start_date", "end_date", "specialty", "doctor"},
    "schedule_appointment": {
        "appointment_type",
        "preferred_date",
        "preferred_time",
        "doctor",
        "reason",
        "slot_id",
    },
    "cancel_appointment": {"appointment_id"},
    "list_appointments": set(),
    "list_medications": {"status"},
    "request_refill": {"medication_name"},
    "request_new_prescription": {"medication_name", "reason", "dosage", "frequency"},
    "message_pcp": {
        "reason",
        "message",
        "symptom_onset",
        "severity",
        "relevant_medications",
        "additional_context",
        "urgency",
    },
    "join_virtual_call_queue": {"doctor", "reason"},
    "get_profile": set(),
    "update_pcp": {"doctor"},
    "update_pharmacy": {"name", "address", "phone"},
    "update_insurance": {"provider", "plan_type"},
    "update_contact_info": {"phone", "email", "address"},
}


def test_there_are_exactly_the_fifteen_contract_tools_each_with_a_handler():
    assert [spec.name for spec in SPECS] == list(ARGUMENTS)
    assert set(HANDLERS) == set(ARGUMENTS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_spec_has_the_contract_arguments(spec):
    assert set(spec.parameters["properties"]) == ARGUMENTS[spec.name]
    assert set(spec.parameters["required"]) <= ARGUMENTS[spec.name]


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_parameters_schema_is_valid_json_schema(spec):
    Draft202012Validator.check_schema(spec.parameters)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_spec_renders_to_a_valid_openai_tool(spec):
    rendered = spec.to_openai()
    TypeAdapter(openai.types.chat.ChatCompletionToolParam).validate_python(rendered, strict=True)
    TypeAdapter(openai.types.shared_params.FunctionDefinition).validate_python(
        rendered["function"], strict=True
    )


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_spec_renders_to_a_valid_anthropic_tool(spec):
    TypeAdapter(anthropic.types.ToolParam).validate_python(spec.to_anthropic(), strict=True)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_description_is_substantial_but_within_provider_limits(spec):
    assert 60 < len(spec.description) <= 1024
    assert spec.name.replace("_", "").isalpha() and len(spec.name) <= 64


def test_a_typed_dict_check_would_catch_a_malformed_tool():
    with pytest.raises(ValueError):
        TypeAdapter(anthropic.types.ToolParam).validate_python(
            {"name": "x", "input_schema": "not a schema"}, strict=True
        )


def test_the_write_tools_are_real_tools_and_the_rest_only_read():
    from benchmark.engine.sandbox.specs import TOOL_SPECS, WRITE_TOOLS

    assert set(TOOL_SPECS) > WRITE_TOOLS
    assert set(TOOL_SPECS) - WRITE_TOOLS == {
        "list_doctors", "get_available_appointments", "list_appointments",
        "list_medications", "get_profile",
    }  # fmt: skip
