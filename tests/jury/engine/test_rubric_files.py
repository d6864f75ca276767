import pytest

from jury.engine.rubrics import (
    RUBRICS_DIR,
    RubricError,
    default_weights,
    dimension_rubrics,
    load_rubrics,
    parse_rubric,
)

EXPECTED_COUNTS = {
    "TC": (3, 10),
    "CS": (5, 18),
    "WA": (4, 21),
    "TQ": (3, 14),
    "CH": (8, 27),
    "CQ": (7, 12),
}


@pytest.fixture(scope="module")
def rubrics():
    return load_rubrics()


@pytest.fixture
def task_completion_text():
    return (RUBRICS_DIR / "task_completion.yaml").read_text()


def test_the_six_dimensions_hold_30_sub_dimensions_and_102_criteria(rubrics):
    dimensions = dimension_rubrics(rubrics)
    assert sum(len(r.sub_dimensions) for r in dimensions.values()) == 30
    assert sum(r.criterion_count for r in dimensions.values()) == 102


def test_each_dimension_has_its_own_sub_dimension_and_criterion_count(rubrics):
    counts = {
        r.code: (len(r.sub_dimensions), r.criterion_count)
        for r in dimension_rubrics(rubrics).values()
    }
    assert counts == EXPECTED_COUNTS


def test_default_weights_match_the_paper_and_sum_to_8_3(rubrics):
    weights = {rubrics[r].code: w for r, w in default_weights(rubrics).items()}
    assert weights == {"TC": 1.0, "CS": 2.0, "WA": 1.6, "TQ": 1.4, "CH": 1.4, "CQ": 0.9}
    assert sum(weights.values()) == pytest.approx(8.3)


def test_tracks_split_clinical_from_operational(rubrics):
    tracks = {r.code: r.track for r in dimension_rubrics(rubrics).values()}
    assert {code for code, track in tracks.items() if track == "clinical"} == {"CS", "TQ", "CH"}


def test_dimensions_come_first_in_paper_order_then_realism(rubrics):
    assert [r.code for r in rubrics.values()] == ["TC", "CS", "WA", "TQ", "CH", "CQ", "PR", "CR"]


def test_realism_rubrics_are_not_judged_and_have_five_levels(rubrics):
    for rubric_id in ("profile_realism", "conversation_realism"):
        rubric = rubrics[rubric_id]
        assert not rubric.judged
        assert [level.score for level in rubric.levels] == [1, 2, 3, 4, 5]
        assert rubric.weight is None


def test_every_dimension_defaults_to_4_and_names_forced_fails(rubrics):
    for rubric in dimension_rubrics(rubrics).values():
        assert rubric.applicability.default_score == 4
        assert rubric.forced_fail
        labels = [level.label for level in rubric.levels]
        assert labels == ["Fail", "Poor", "Adequate", "Good", "Excellent"]


def test_parse_rubric_reads_the_same_rubric_as_the_folder(rubrics, task_completion_text):
    assert parse_rubric(task_completion_text) == rubrics["task_completion"]


def test_fingerprint_ignores_comments_but_follows_content(task_completion_text):
    original = parse_rubric(task_completion_text)
    commented = parse_rubric("# a researcher's note\n" + task_completion_text)
    bumped = parse_rubric(task_completion_text.replace("version: 1", "version: 2"))
    assert commented.fingerprint == original.fingerprint
    assert bumped.fingerprint != original.fingerprint
    assert len(original.fingerprint) == 64


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("weight: 1.0", "weight: -1"), "'weight'"),
        (("weight: 1.0", "weight: 0"), "'weight'"),
        (("  5:\n    label: Excellent", "  6:\n    label: Excellent"), "'levels'"),
        (("    label: Poor\n", ""), "'levels.2.label'"),
        (("version: 1", "version: one"), "'version'"),
        (("track: operational", "track: admin"), "'track'"),
        (("  default_score: 4", "  default_score: 9"), "'applicability.default_score'"),
        (("forced_fail:", "forced_fails:"), "forced_fails"),
    ],
)
def test_invalid_rubric_text_is_rejected_naming_the_field(task_completion_text, edit, field):
    old, new = edit
    assert old in task_completion_text
    with pytest.raises(RubricError, match=field):
        parse_rubric(task_completion_text.replace(old, new, 1))


def test_a_sub_dimension_without_criteria_is_rejected(task_completion_text):
    broken = task_completion_text.replace(
        "  - name: Confirmation quality\n    criteria:\n", "  - name: Confirmation quality\n"
    )
    with pytest.raises(RubricError, match=r"sub_dimensions\[1\]\.criteria"):
        parse_rubric(broken)


def test_unreadable_yaml_is_a_rubric_error():
    with pytest.raises(RubricError, match="could not be read"):
        parse_rubric("id: [unclosed")


def test_realism_rubrics_refuse_dimension_fields():
    text = (RUBRICS_DIR / "profile_realism.yaml").read_text() + "weight: 1.0\n"
    with pytest.raises(RubricError, match="weight"):
        parse_rubric(text)


def test_a_file_whose_id_differs_from_its_name_is_rejected(tmp_path, task_completion_text):
    (tmp_path / "renamed.yaml").write_text(task_completion_text)
    with pytest.raises(RubricError, match="renamed.yaml"):
        load_rubrics(tmp_path)
