import pytest

from benchmark.engine.agents.personalities import (
    DEFAULT_PATH,
    DIMENSIONS,
    LEVELS,
    PersonalityError,
    default_personalities,
    levels_in_prompt,
    parse_personalities,
)

TYPES = ("cooperative", "anxious", "terse", "stoic", "skeptical", "confused")


def _minimal_yaml(levels: dict[str, str] | None = None, extra_dimension: str = "") -> str:
    dimensions = "".join(
        f"  {dimension}:\n"
        + "".join(f"    {level}: {dimension} {level} text\n" for level in LEVELS)
        for dimension in DIMENSIONS
    )
    levels = levels or {dimension: "medium" for dimension in DIMENSIONS}
    type_levels = "".join(f"      {key}: {value}\n" for key, value in levels.items())
    return (
        "version: 1\ndimensions:\n"
        + dimensions
        + extra_dimension
        + "types:\n  plain:\n    summary: plain\n    levels:\n"
        + type_levels
    )


def test_the_shipped_file_defines_six_types_over_seven_dimensions():
    catalog = default_personalities()
    assert sorted(catalog.types) == sorted(TYPES)
    for personality in catalog.types.values():
        assert [trait.dimension for trait in personality.traits] == list(DIMENSIONS)
        assert all(trait.level in LEVELS and trait.description for trait in personality.traits)


def test_skeptical_has_the_levels_the_spec_gives():
    skeptical = default_personalities().get("skeptical")
    assert {trait.dimension: trait.level for trait in skeptical.traits} == {
        "cooperation": "low",
        "anxiety": "medium",
        "health_literacy": "high",
        "patience": "medium",
        "symptom_clarity": "high",
        "urgency": "medium",
        "communication_style": "low",
    }


def test_every_dimension_level_pair_has_its_own_description():
    catalog = default_personalities()
    descriptions = {
        (trait.dimension, trait.level): trait.description
        for personality in catalog.types.values()
        for trait in personality.traits
    }
    assert len(set(descriptions.values())) == len(descriptions)


def test_rendered_traits_name_the_type_and_carry_every_description():
    terse = default_personalities().get("terse")
    rendered = terse.render()
    assert rendered.startswith("Personality type: terse")
    for trait in terse.traits:
        assert trait.description in rendered
    assert terse.level("communication_style") == "low"


def test_it_reports_an_unknown_personality_with_the_known_ones():
    with pytest.raises(PersonalityError, match="unknown personality 'grumpy'.*anxious"):
        default_personalities().get("grumpy")


def test_it_rejects_a_type_missing_a_dimension():
    levels = {dimension: "low" for dimension in DIMENSIONS[:-1]}
    with pytest.raises(
        PersonalityError, match="types.plain.levels is missing: communication_style"
    ):
        parse_personalities(_minimal_yaml(levels))


def test_it_rejects_a_level_outside_low_medium_high():
    levels = {dimension: "low" for dimension in DIMENSIONS} | {"urgency": "extreme"}
    with pytest.raises(PersonalityError, match="urgency is 'extreme'"):
        parse_personalities(_minimal_yaml(levels))


def test_it_rejects_an_unknown_dimension():
    extra = "  humour:\n    low: a\n    medium: b\n    high: c\n"
    with pytest.raises(PersonalityError, match="unknown entries: humour"):
        parse_personalities(_minimal_yaml(extra_dimension=extra))


def test_it_rejects_text_that_is_not_yaml():
    with pytest.raises(PersonalityError, match="not valid YAML"):
        parse_personalities("types: [unclosed")


def test_a_valid_edited_file_loads():
    catalog = parse_personalities(_minimal_yaml())
    assert catalog.get("plain").level("anxiety") == "medium"
    assert DEFAULT_PATH.name == "personalities.yaml"


def test_the_levels_a_prompt_was_rendered_with_can_be_read_back_from_it():
    for personality in default_personalities().types.values():
        prompt = f"<persona>\n{personality.render()}\n</persona>\n<rules>\n- Stay in character.\n"
        expected = {trait.dimension: trait.level for trait in personality.traits}
        assert levels_in_prompt(prompt) == expected
    assert levels_in_prompt("no persona here") == {}
