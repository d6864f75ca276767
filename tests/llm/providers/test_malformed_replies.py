"""A reply that is not what the wire format promises is a provider fault on both adapters:
classified the same way, retried, and never raised as an AttributeError or TypeError that the
conversation loop would blame on the agent under test."""

import pytest

from llm.engine.chat import ProviderError
from tests.fakes.llm_server import answer, malformed

MODELS = ("openai/gpt-5.5", "anthropic/claude-opus-4-8", "openai-compatible/local")
BODIES = (
    "{}",
    "null",
    "[]",
    "<html><body>502 Bad Gateway</body></html>",
    '{"content": "not a list of blocks"}',
    '{"content": [{"type": "text"}], "usage": null}',
    '{"choices": [{"message": null}]}',
    '{"choices": [], "usage": {"prompt_tokens": 1}}',
)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("body", BODIES)
def test_a_malformed_body_is_a_malformed_provider_error_on_every_adapter(
    model, body, make_client, llm_server, user_request
):
    llm_server.script(*[malformed(body)] * 3)
    client = make_client(model, max_retries=2)

    with pytest.raises(ProviderError) as caught:
        client.chat(user_request(model))

    assert caught.value.kind == "malformed"
    assert caught.value.retryable
    assert len(llm_server.requests) == 3  # asked again like after a 500


@pytest.mark.parametrize("model", MODELS)
def test_a_malformed_body_is_retried_and_the_next_good_answer_used(
    model, make_client, llm_server, sleeps, user_request
):
    llm_server.script(malformed("{}"), answer("Monday at 9 works."))

    response = make_client(model, max_retries=2).chat(user_request(model))

    assert response.text == "Monday at 9 works."
    assert len(sleeps) == 1
