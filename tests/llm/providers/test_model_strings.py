import pytest

from llm.configured import provider_settings
from llm.engine.chat import ProviderError
from llm.engine.providers import ModelClient, ProviderSettings, parse_model_string
from llm.engine.providers.model_strings import check_model_string, offline_behaviours


def test_it_splits_provider_and_model_at_the_first_slash():
    parsed = parse_model_string("openai-compatible/meta-llama/Llama-3.1-8B")

    assert (parsed.provider, parsed.name) == ("openai-compatible", "meta-llama/Llama-3.1-8B")
    assert str(parsed) == "openai-compatible/meta-llama/Llama-3.1-8B"


@pytest.mark.parametrize("model", ["gemini/pro", "gpt-5.5", "openai/", "Openai/gpt-5.5"])
def test_it_rejects_model_strings_it_cannot_route(model):
    with pytest.raises(ProviderError) as raised:
        parse_model_string(model)

    assert raised.value.kind == "config"
    assert "openai/<model>" in str(raised.value)


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-5.5", "OPENAI_API_KEY"),
        ("anthropic/claude-opus-4-8", "ANTHROPIC_API_KEY"),
        ("openai-compatible/llama", "OPENAI_COMPATIBLE_BASE_URL"),
    ],
)
def test_it_names_the_missing_setting(model, variable):
    with pytest.raises(ProviderError) as raised:
        ModelClient(model, settings=ProviderSettings())

    assert raised.value.kind == "config"
    assert variable in str(raised.value)


def test_it_keeps_keys_out_of_the_settings_repr():
    settings = ProviderSettings(openai_api_key="sk-secret", anthropic_api_key="ak-secret")

    assert "secret" not in repr(settings)


def test_it_reads_keys_and_limits_from_django_settings(settings):
    settings.OPENAI_API_KEY = "sk-from-settings"
    settings.OPENAI_COMPATIBLE_BASE_URL = "http://127.0.0.1:8000/v1"
    settings.LLM_TIMEOUT_SECONDS = 30
    del settings.LLM_MAX_RETRIES

    loaded = provider_settings()

    assert loaded.openai_api_key == "sk-from-settings"
    assert loaded.openai_compatible_base_url == "http://127.0.0.1:8000/v1"
    assert loaded.timeout_seconds == 30.0
    assert loaded.max_retries == 6


def test_offline_behaviours_are_read_from_the_script_that_plays_the_role():
    from jury.engine import offline_judge

    assert offline_behaviours("judge") == offline_judge.BEHAVIOURS
    assert "careful" in offline_behaviours("assistant")


@pytest.mark.parametrize("model", ["offline/carefull", "offline/nope", "offline/strict"])
def test_an_unknown_offline_assistant_is_refused_with_the_valid_ones(model):
    with pytest.raises(ProviderError) as raised:
        check_model_string(model, purpose="assistant")

    assert raised.value.kind == "config"
    assert f"unknown offline behaviour {model.split('/')[1]!r}" in str(raised.value)
    assert "offline/careful, offline/careless" in str(raised.value)


def test_real_providers_and_known_behaviours_pass_the_check():
    assert check_model_string("offline/flaky", purpose="judge").name == "flaky"
    assert check_model_string("openai/any-model-name", purpose="assistant").provider == "openai"
    with pytest.raises(ProviderError, match="unknown provider 'acme'"):
        check_model_string("acme/robot", purpose="judge")
