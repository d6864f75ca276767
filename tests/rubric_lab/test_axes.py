"""The axes file: HealthBench's five axes, and every axis the lab generates named in them."""

import pytest

from rubric_lab.engine import axes, rubric


def test_every_axis_the_lab_generates_is_one_of_healthbenchs():
    names = axes.load_axis_names()
    assert names.axes == (
        "accuracy", "completeness", "context_awareness", "communication_quality",
        "instruction_following",
    )  # fmt: skip
    assert {names.common(axis) for axis in rubric.AXES} <= set(names.axes)
    assert names.common("Communication ") == "communication_quality"
    assert names.common("") == "" and names.common("my_own_axis") == "my_own_axis"


def test_an_alias_to_no_axis_is_refused_naming_it(tmp_path):
    path = tmp_path / "axes.yaml"
    path.write_text("version: 1\naxes: [accuracy]\naliases: {safety: harm}\n", encoding="utf-8")
    with pytest.raises(axes.AxesFileError, match="aliases point to harm, not an axis"):
        axes.load_axis_names(path)
