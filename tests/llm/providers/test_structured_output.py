"""A call that asks for JSON sends its schema as the provider's structured output where the
model's family takes it (llm/data/generation.yaml), each provider in its own words, checked
against the SDKs' request types by the fake; other models are asked by the prompt alone, and the
answer is validated and repaired either way."""

import pytest

from llm.engine.structured import InvalidOutput, request_json
from tests.fakes.llm_server import answer

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
}
SENT = {key: value for key, value in SCHEMA.items() if key != "$schema"}


def needs_score(data):
    if "score" not in data:
        raise InvalidOutput("no score")
    return data


def schema_sent(body):
    if "response_format" in body:  # chat completions, OpenAI's and vLLM's
        assert body["response_format"]["type"] == "json_schema"
        return body["response_format"]["json_schema"]["schema"]
    if "text" in body:  # the Responses API
        return body["text"]["format"]["schema"]
    if "output_config" in body:  # Anthropic
        return body["output_config"]["format"]["schema"]
    return None


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4.1",
        "openai/gpt-5.5@api=responses",
        "anthropic/claude-opus-4-8",
        "openai-compatible/Qwen/Qwen3-8B",
    ],
)
def test_the_schema_goes_to_a_provider_that_holds_answers_to_it(
    make_client, llm_server, user_request, model
):
    llm_server.script(answer('{"score": 4}'))
    result = request_json(make_client(model), user_request(model), needs_score, schema=SCHEMA)

    assert result.data == {"score": 4}
    # Claude's structured outputs require every object closed.
    closed = {**SENT, "additionalProperties": False} if model.startswith("anthropic/") else SENT
    assert schema_sent(llm_server.requests[0].body) == closed


def test_claude_gets_only_what_its_structured_outputs_take():
    from llm.engine.providers.anthropic_chat import claude_schema

    bounded = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"},
                     "minItems": 2},
        },
        "required": ["score"],
    }  # fmt: skip
    assert claude_schema(bounded) == {
        "type": "object",
        "properties": {
            "score": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["score"],
        "additionalProperties": False,
    }
    # A free-form object cannot be held to: the prompt alone asks for it.
    assert claude_schema({"type": "object"}) is None
    nested = {"type": "object", "properties": {"notes": {"type": "object"}}}
    assert claude_schema(nested) is None


def test_claude_is_not_sent_a_schema_it_cannot_hold_to(make_client, llm_server, user_request):
    model = "anthropic/claude-opus-4-8"
    llm_server.script(answer('{"anything": 1}'))
    request_json(make_client(model), user_request(model), lambda data: data)  # any object

    assert "output_config" not in llm_server.requests[0].body


def test_a_model_without_structured_output_is_asked_by_the_prompt_and_repaired(
    make_client, llm_server, user_request
):
    model = "openai-compatible/llama-3"
    llm_server.script(answer("Four, I think."), answer('{"score": 4}'))
    result = request_json(make_client(model), user_request(model), needs_score, schema=SCHEMA)

    assert result.data == {"score": 4} and len(result.responses) == 2
    assert [schema_sent(r.body) for r in llm_server.requests] == [None, None]


def test_an_answer_that_misses_the_schema_is_still_repaired(make_client, llm_server, user_request):
    model = "openai/gpt-4.1"
    llm_server.script(answer('{"note": "no score"}'), answer('{"score": 2}'))
    result = request_json(make_client(model), user_request(model), needs_score, schema=SCHEMA)

    assert result.data == {"score": 2}
    assert all(schema_sent(r.body) == SENT for r in llm_server.requests)
