import pytest

from benchmark.engine.sandbox.vocabulary import (
    SPECIALTIES_FILE,
    canonical_specialty,
    load_vocabulary,
    normalise_appointment_type,
    normalise_medication_status,
    pcp_specialties_for_age,
    resolve_specialty_filter,
)


def test_the_shipped_specialties_file_is_valid():
    vocabulary = load_vocabulary(SPECIALTIES_FILE)
    assert {"Cardiology", "Endocrinology", "Psychiatry", "Family Medicine"} <= set(vocabulary.names)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("ob/gyn", "Obstetrics and Gynecology"),
        ("  ENT ", "Otolaryngology"),
        ("family-practice", "Family Medicine"),
        ("Dentistry", None),
    ],
)
def test_specialty_synonyms_resolve_to_canonical_names(text, name):
    assert canonical_specialty(text) == name


def test_primary_care_filter_selects_all_primary_care_specialties():
    assert set(resolve_specialty_filter("Primary Care")) == {
        "Family Medicine",
        "Internal Medicine",
        "Pediatrics",
        "Geriatric Medicine",
    }


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (5, {"Family Medicine", "Pediatrics"}),
        (30, {"Family Medicine", "Internal Medicine"}),
        (70, {"Family Medicine", "Internal Medicine", "Geriatric Medicine"}),
        (None, {"Family Medicine", "Internal Medicine"}),
    ],
)
def test_pcp_specialties_depend_on_age(age, expected):
    assert set(pcp_specialties_for_age(age)) == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [("Video-Call", "telehealth"), ("OFFICE", "in-person"), ("phone call", "phone"), ("fax", None)],
)
def test_appointment_types_normalise(text, kind):
    assert normalise_appointment_type(text) == kind


@pytest.mark.parametrize(
    ("text", "status"),
    [("Under renewal", "under_renewal"), ("discontinued", "past"), ("weird", None)],
)
def test_medication_statuses_normalise(text, status):
    assert normalise_medication_status(text) == status


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- just a list", "'specialties' list"),
        ("specialties: [{synonyms: [a]}]", "string 'name'"),
        ("specialties: [{name: A, synonyms: a}]", "'synonyms' must be a list"),
        ("specialties: [{name: A, primary_care: {min_age: 9, max_age: 2}}]", "min_age <= max_age"),
        ("specialties: [{name: A, synonyms: [b]}, {name: B}]", "names both"),
        ("specialties: [{name: A}]", "at least one specialty"),
        (
            "specialties: [{name: A, primary_care: {min_age: 0, max_age: 9}}]\n"
            "primary_care_aliases: pcp",
            "primary_care_aliases",
        ),
    ],
)
def test_a_broken_specialties_file_is_rejected_with_the_reason(tmp_path, content, message):
    path = tmp_path / "specialties.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_vocabulary(path)
