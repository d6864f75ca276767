import pytest

from benchmark.engine.agents.agent_config import (
    AgentConfigError,
    get_agent_config,
    load_agent_configs,
    parse_agent_config,
)
from benchmark.engine.agents.prompts import PROMPTS_DIR
from benchmark.engine.sandbox.examples import EXAMPLE_NOW, EXAMPLE_PROFILE

VARIANT = """
id: my_variant
name: My variant
description: Baseline plus one line.
prompt: assistant_baseline.md
extra_instructions: Always greet the patient by their preferred name.
"""


def test_the_shipped_agents_are_the_baseline_and_the_clinically_grounded_variant():
    assert list(load_agent_configs()) == ["baseline", "clinically_grounded"]


def test_the_clinically_grounded_agent_shares_the_base_prompt_and_adds_screening():
    baseline = get_agent_config("baseline")
    grounded = get_agent_config("clinically_grounded")
    assert grounded.prompt.content_hash == baseline.prompt.content_hash
    assert baseline.extra_instructions == ""
    for topic in ("anticoagulant", "heart failure", "dialysis", "immune", "three or more"):
        assert topic in grounded.extra_instructions


def test_extra_instructions_are_appended_as_their_own_section():
    grounded = get_agent_config("clinically_grounded")
    system = grounded.render_system(profile=EXAMPLE_PROFILE, now=EXAMPLE_NOW)
    assert system.rstrip().endswith("</additional_context>")
    assert "<additional_context>" not in get_agent_config("baseline").render_system(
        profile=EXAMPLE_PROFILE, now=EXAMPLE_NOW
    )


def test_fingerprints_are_stable_and_differ_between_agents():
    first = get_agent_config("baseline").fingerprint
    assert first == get_agent_config("baseline").fingerprint
    assert first != get_agent_config("clinically_grounded").fingerprint


def test_the_fingerprint_changes_with_any_field_and_with_the_prompt_text(tmp_path):
    variant = parse_agent_config(VARIANT)
    assert variant.fingerprint == parse_agent_config(VARIANT).fingerprint
    renamed = parse_agent_config(VARIANT.replace("name: My variant", "name: Renamed"))
    reworded = parse_agent_config(VARIANT.replace("preferred name", "first name"))
    assert len({variant.fingerprint, renamed.fingerprint, reworded.fingerprint}) == 3
    prompt = (PROMPTS_DIR / "assistant_baseline.md").read_text()
    (tmp_path / "assistant_baseline.md").write_text(prompt.replace("short", "brief"))
    edited_prompt = parse_agent_config(VARIANT, prompts_dir=tmp_path)
    assert edited_prompt.fingerprint != variant.fingerprint


def test_a_user_can_register_a_variant_by_dropping_a_file(tmp_path):
    (tmp_path / "mine.yaml").write_text(VARIANT)
    configs = load_agent_configs(tmp_path)
    assert configs["my_variant"].extra_instructions.startswith("Always greet")


def test_two_files_with_the_same_id_are_rejected(tmp_path):
    (tmp_path / "a.yaml").write_text(VARIANT)
    (tmp_path / "b.yaml").write_text(VARIANT)
    with pytest.raises(AgentConfigError, match="b.yaml: agent id 'my_variant' is already used"):
        load_agent_configs(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("id: my_variant", "id: My Variant!"), "must be lowercase"),
        (("prompt: assistant_baseline.md", "prompt: missing.md"), "prompt file not found"),
        (("prompt: assistant_baseline.md", "prompt: ../personalities.yaml"), "must be inside"),
        (("name: My variant", "temperature: 0.2\nname: x"), "unknown keys temperature"),
        (("name: My variant", "name: ''"), "missing name"),
    ],
)
def test_it_rejects_malformed_configurations(change, message):
    with pytest.raises(AgentConfigError, match=message):
        parse_agent_config(VARIANT.replace(*change))


def test_it_names_the_known_agents_when_one_is_missing():
    with pytest.raises(AgentConfigError, match="unknown agent 'nope'; known: baseline"):
        get_agent_config("nope")
