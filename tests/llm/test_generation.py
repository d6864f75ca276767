"""Generation settings carried by model strings: what each family takes, the reasons it refuses
the rest, and the settings a call is sent with (llm.engine.generation)."""

import pytest

from llm.engine import generation
from llm.engine.chat import ChatRequest, Message
from llm.engine.generation import (
    GenerationSettings,
    apply,
    family_of,
    settings_of,
    settings_problems,
)


@pytest.mark.parametrize(
    ("model", "problems"),
    [
        ("openai/gpt-5.5@effort=high", []),
        ("openai/gpt-5.5@effort=minimal,max_tokens=16000", []),
        (
            "openai/gpt-5.5@temperature=0.2",
            ["openai/gpt-5.5 refuses a custom temperature (model family: OpenAI reasoning models)"],
        ),
        (
            "openai/gpt-5.5@effort=extreme",
            ["effort 'extreme' is none of minimal, low, medium, high"],
        ),
        ("openai/gpt-4o@temperature=0.2,top_p=0.9", []),
        (
            "openai/gpt-4o@effort=low",
            ["openai/gpt-4o takes no reasoning effort (model family: OpenAI chat models)"],
        ),
        ("anthropic/claude-opus-4-8@thinking=8000", []),
        ("anthropic/claude-opus-4-8@thinking=off", []),
        (
            "anthropic/claude-opus-4-8@thinking=500",
            ["a thinking budget is at least 1024 tokens, not 500"],
        ),
        (
            "anthropic/claude-opus-4-8@thinking=8000,max_tokens=4000",
            ["the thinking budget (8000) must be below the output limit (max_tokens=4000)"],
        ),
        (
            "anthropic/claude-opus-4-8@thinking=2048,temperature=0.3",
            [
                "anthropic/claude-opus-4-8 refuses a custom temperature "
                "(model family: Claude 4.5 and later)"
            ],
        ),
        ("openai-compatible/Qwen/Qwen3-32B@thinking=off", []),
        (
            "vllm-a/qwen3-8b@thinking=4000",
            ["vllm-a/qwen3-8b takes thinking=on or off, not a budget"],
        ),
        ("openai-compatible/gpt-oss-120b@effort=high", []),
        (
            "openai/gpt-5.5@foo=1",
            [
                "unknown setting 'foo'; the settings are "
                "effort, thinking, max_tokens, temperature, top_p, api"
            ],
        ),
        (
            "openai/gpt-5.5@effort",
            [
                "'effort' is not key=value "
                "(keys: effort, thinking, max_tokens, temperature, top_p, api)"
            ],
        ),
        ("openai/gpt-5.5@effort=high,effort=low", ["effort is given twice"]),
        ("openai/gpt-5.5@api=responses,effort=high", []),
        (
            "anthropic/claude-opus-4-8@api=responses",
            [
                "anthropic/claude-opus-4-8 is not an OpenAI model: "
                "only openai/ models take api=responses"
            ],
        ),
        ("openai/gpt-5.5@api=batch", ["api must be one of chat, responses, not 'batch'"]),
        ("openai/gpt-4o@temperature=3", ["temperature must be between 0 and 2, not 3"]),
        (
            "openai/gpt-4o@max_tokens=12.5",
            ["max_tokens must be a whole number of tokens, not '12.5'"],
        ),
        (
            "offline/careful@effort=high",
            ["offline/careful takes no reasoning effort (model family: Scripted offline provider)"],
        ),
    ],
)
def test_each_family_takes_its_settings_and_names_why_it_refuses_others(model, problems):
    assert settings_problems(model) == problems


def request(**fields):
    return ChatRequest(
        model="m", purpose="judge", system="s", messages=(Message("user", "hi"),), **fields
    )


def effective(model, **fields):
    return apply(request(**fields), settings_of(model), family_of(model))


def test_a_reasoning_model_drops_a_roles_own_temperature_instead_of_sending_it():
    # The rubric lab asks every stage for temperature 0; a reasoning model would refuse it.
    sent = effective("openai/gpt-5.5@effort=high", temperature=0.0, top_p=0.9, max_tokens=900)
    assert (sent.temperature, sent.top_p, sent.reasoning_effort, sent.max_tokens) == (
        None, None, "high", 900
    )  # fmt: skip
    kept = effective("openai/gpt-4o", temperature=0.0)
    assert kept.temperature == 0.0 and kept.reasoning_effort is None


def test_claudes_budget_is_added_to_the_roles_output_limit_and_sampling_is_dropped():
    sent = effective("anthropic/claude-opus-4-8@thinking=2048", temperature=0.0, max_tokens=1000)
    assert (sent.thinking_budget, sent.max_tokens, sent.temperature) == (2048, 3048, None)
    own_limit = effective(
        "anthropic/claude-opus-4-8@thinking=2048,max_tokens=9000", max_tokens=1000
    )
    assert own_limit.max_tokens == 9000
    default = effective("anthropic/claude-opus-4-8@thinking=2048")
    assert default.max_tokens == 2048 + generation.DEFAULT_MAX_TOKENS


def test_the_model_strings_settings_win_over_the_roles():
    sent = effective("openai/gpt-4o@temperature=0.7,max_tokens=300", temperature=0.0, max_tokens=50)
    assert (sent.temperature, sent.max_tokens) == (0.7, 300)
    qwen = effective("openai-compatible/Qwen/Qwen3-8B@thinking=off")
    assert (qwen.thinking_switch, qwen.thinking_budget) == (False, None)


def test_reports_name_the_settings_in_words():
    assert generation.model_label("openai/gpt-5.5@effort=high") == "openai/gpt-5.5, effort high"
    assert (
        generation.model_label("anthropic/claude-opus-4-8@thinking=8000,max_tokens=16000")
        == "anthropic/claude-opus-4-8, thinking 8000 tokens, max tokens 16000"
    )
    assert generation.model_label("openai/gpt-5.5") == "openai/gpt-5.5"


def test_family_defaults_fill_what_a_model_string_leaves_out(tmp_path, monkeypatch):
    data = tmp_path / "generation.yaml"
    data.write_text(
        "families:\n"
        "  - name: Reasoners\n    match: ['openai/gpt-5*']\n    efforts: [low, high]\n"
        "    sampling: false\n    defaults: {effort: low, max_tokens: 8000}\n"
        "  - name: Others\n    match: ['*']\n"
    )
    shipped = generation.families
    monkeypatch.setattr(generation, "families", lambda: shipped(data))
    assert settings_of("openai/gpt-5.5") == GenerationSettings(effort="low", max_tokens=8000)
    assert settings_of("openai/gpt-5.5@effort=high").effort == "high"
    assert settings_of("openai/gpt-4o") == GenerationSettings()


def test_the_shipped_families_file_loads_and_ends_with_a_catch_all():
    shipped = generation.families()
    assert shipped[-1].match == ("*",)
    assert {family.name for family in shipped} >= {
        "OpenAI reasoning models",
        "Claude 4.5 and later",
        "Qwen3",
    }


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ("openai/gpt-4o@max_tokens=nan", "max_tokens must be a finite number, not 'nan'"),
        ("openai/gpt-4o@temperature=inf", "temperature must be a finite number, not 'inf'"),
        ("openai/gpt-4o@", "nothing follows the '@' in 'openai/gpt-4o@'"),
    ],
)
def test_non_numbers_and_an_empty_tail_are_named_not_crashed_on(model, problem):
    (found,) = settings_problems(model)
    assert found.startswith(problem)
