import json
import re
from datetime import date

import pytest

from benchmark.engine.agents import prompts
from benchmark.engine.agents.prompts import (
    PATIENT_SECTIONS,
    PROMPTS_DIR,
    TERMINATION_TOKEN,
    PromptError,
    default_patient_prompt,
    load_assistant_prompt,
    parse_prompt,
    patient_opening_cue,
    render_patient_system,
)
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY, EXAMPLE_NOW
from tests.engine.agents.fakes import SEED

ASSISTANT_SECTIONS = (
    "role",
    "current_datetime",
    "patient_profile",
    "capabilities",
    "guidelines",
    "safety",
)
STORY = EXAMPLE_ENTRY["patient_story"]
PROFILE = EXAMPLE_ENTRY["patient_profile"]


def _patient_system(**seed_changes) -> str:
    return render_patient_system(
        profile=PROFILE, story=STORY, seed=SEED | seed_changes, now=EXAMPLE_NOW
    )


def test_the_patient_prompt_has_every_section_the_spec_lists():
    assert default_patient_prompt().sections == PATIENT_SECTIONS


def test_the_baseline_assistant_prompt_has_every_section():
    prompt = load_assistant_prompt(PROMPTS_DIR / "assistant_baseline.md")
    assert prompt.sections == ASSISTANT_SECTIONS
    assert prompt.placeholders == {"now", "profile"}


def test_prompts_carry_a_version_and_a_content_hash():
    prompt = default_patient_prompt()
    assert prompt.version == "1"
    assert re.fullmatch(r"[0-9a-f]{64}", prompt.content_hash)


def test_the_content_hash_changes_with_any_edit():
    text = "---\nversion: 1\n---\n<role>\nHello\n</role>\n"
    first = parse_prompt(text, name="a.md")
    second = parse_prompt(text.replace("Hello", "Hello there"), name="a.md")
    assert first.version == second.version
    assert first.content_hash != second.content_hash


def test_the_rendered_patient_prompt_fills_every_slot():
    system = _patient_system()
    assert "{{" not in system
    assert STORY.strip() in system
    assert "Wednesday, 2026-11-04 09:30" in system
    assert "Personality type: cooperative" in system
    assert "book an appointment" in system
    assert "care at a distance" in system
    assert f"exactly {TERMINATION_TOKEN}" in system
    assert '"first_name": "Maria"' in system


def test_the_patient_speaks_as_themself_when_adult():
    system = _patient_system()
    assert "You are Maria Lopez, the person described" in system


def test_a_pediatric_patient_is_played_by_their_caregiver():
    profile = PROFILE | {"caregiver": {"name": "Ana Lopez", "relationship": "mother"}}
    system = render_patient_system(
        profile=profile, story=STORY, seed=SEED | {"age_group": "pediatric"}, now=EXAMPLE_NOW
    )
    assert "You are Ana Lopez (mother), who looks after Maria Lopez" in system


def test_an_unknown_subcategory_falls_back_to_its_name():
    system = _patient_system(task_subcategory="travel_vaccines")
    assert "reaching out today to get help with travel vaccines" in system


def test_the_opening_cue_comes_from_the_prompt_file():
    assert patient_opening_cue().startswith("[The clinic chat is now open.")


def test_a_prompt_without_front_matter_is_rejected():
    with pytest.raises(PromptError, match="front matter"):
        parse_prompt("<role>\nx\n</role>\n", name="bad.md")


def test_a_prompt_without_a_version_is_rejected():
    with pytest.raises(PromptError, match="version"):
        parse_prompt("---\nfragments: {}\n---\n<role>\nx\n</role>\n", name="bad.md")


def test_an_assistant_prompt_with_an_unknown_placeholder_is_rejected(tmp_path):
    path = tmp_path / "mine.md"
    path.write_text("---\nversion: 2\n---\n<role>\n{{now}} {{story}}\n</role>\n")
    with pytest.raises(PromptError, match="unknown placeholders \\['story'\\]"):
        load_assistant_prompt(path)


def test_rendering_without_a_value_names_the_placeholder():
    prompt = parse_prompt("---\nversion: 1\n---\nHello {{name}}\n", name="x.md")
    with pytest.raises(PromptError, match="no value for placeholder \\{\\{name\\}\\}"):
        prompt.render({})


@pytest.mark.parametrize(
    "profile",
    [
        {"name": "Zoë Ndlovu", "age": 71, "weight_kg": 72.5, "allergies": [], "notes": {}},
        {"conditions": [{"name": "asthma", "since": date(2019, 3, 1)}], 3: "int key"},
        {"nested": {"deep": [1, 2.0, None, True, "tab\\there", "\u2028"]}, "big": 10**20},
        {},
    ],
)
def test_a_profile_renders_as_indented_json_whether_or_not_it_was_rendered_before(profile):
    prompts._indented.cache_clear()
    expected = json.dumps(profile, indent=2, ensure_ascii=False, default=str)
    assert prompts.format_profile(profile) == expected
    assert prompts.format_profile(dict(profile)) == expected  # another dict, the text reused
    assert prompts._indented.cache_info().hits == 1


def test_two_profiles_that_differ_render_differently():
    assert prompts.format_profile({"age": 71}) != prompts.format_profile({"age": 72})
