"""A refused request for JSON (a judge, an enrichment, a rubric-lab stage) fails at once with
the model's words, on both adapters: asking again for the JSON would be refused again at the
same price, and the refusal is not kept in the response cache."""

import pytest

from llm.engine.providers import InMemoryStore
from llm.engine.structured import StructuredFailure, request_json
from tests.fakes.llm_server import answer, refused

WORDS = "I can't grade this conversation."


@pytest.mark.parametrize("model", ["openai/gpt-5.5", "anthropic/claude-opus-4-8"])
def test_a_refused_request_for_json_fails_at_once_with_the_models_words(
    make_client, llm_server, user_request, model
):
    llm_server.script(refused(WORDS))
    client = make_client(model, cache_store=InMemoryStore(), use_cache=True)

    with pytest.raises(StructuredFailure) as failure:
        request_json(client, user_request(model), lambda data: data, max_repairs=2)

    assert failure.value.reason == f"the model refused: {WORDS}"
    assert len(failure.value.responses) == len(llm_server.requests) == 1
    llm_server.script(answer('{"score": 4}'))
    result = request_json(client, user_request(model), lambda data: data)
    assert result.data == {"score": 4} and not result.responses[0].cached


@pytest.mark.parametrize("model", ["openai/gpt-5.5", "anthropic/claude-opus-4-8"])
def test_a_cached_refusal_is_still_a_refusal(make_client, llm_server, user_request, model):
    llm_server.script(refused(WORDS))
    client = make_client(model, cache_store=InMemoryStore(), use_cache=True)

    first = client.chat(user_request(model))
    again = client.chat(user_request(model))

    assert again.cached and again.refusal == first.refusal == WORDS
