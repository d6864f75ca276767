import pytest

from benchmark.engine.distribution_report import COLUMNS, realised_shares, report_csv
from benchmark.engine.sampler import sample_seeds


@pytest.fixture
def report(distribution):
    return realised_shares(sample_seeds(distribution, 3_000, 8), distribution)


def test_it_has_one_row_per_attribute_value_in_the_table_2_shape(distribution, report):
    assert list(report.columns) == COLUMNS
    eligibility_rows = len(distribution.plan.shares("eligibility"))
    assert len(report) == len(distribution.target_shares()) + eligibility_rows
    assert report["count"].sum() == 3_000 * report["attribute"].nunique()


def test_it_includes_task_subcategories_and_derived_gender_identity(report):
    subcategories = report[report["attribute"] == "task_subcategory"]
    assert "emergency_symptoms" in set(subcategories["value"])
    identities = report[report["attribute"] == "gender_identity"]
    assert set(identities["value"]) == {
        "cis_female",
        "cis_male",
        "trans_female",
        "trans_male",
        "non_binary",
    }


def test_subcategory_targets_are_shares_of_all_seeds(report):
    subcategories = report[report["attribute"] == "task_subcategory"]
    assert subcategories["target_share"].sum() == pytest.approx(1.0)


def test_gender_identity_targets_follow_from_independent_sex_and_gender(distribution, report):
    row = report[(report["attribute"] == "gender_identity") & (report["value"] == "cis_female")]
    expected = (
        distribution.probabilities("sex")["female"] * distribution.probabilities("gender")["woman"]
    )
    assert row["target_share"].item() == pytest.approx(expected)


def test_difference_is_realised_minus_target(report):
    assert (report["difference"] == report["realised_share"] - report["target_share"]).all()


def test_values_unknown_to_the_distribution_get_a_zero_target(distribution):
    seeds = sample_seeds(distribution, 10, 8)
    seeds[0] = {**seeds[0], "condition": "Scurvy"}
    report = realised_shares(seeds, distribution)
    row = report[report["value"] == "Scurvy"]
    assert row["target_share"].item() == 0.0
    assert row["realised_share"].item() == pytest.approx(0.1)


def test_an_empty_sample_has_zero_realised_shares(distribution):
    report = realised_shares([], distribution)
    assert (report["realised_share"] == 0).all()
    assert (report["count"] == 0).all()


def test_report_csv_writes_the_text_it_returns(report, tmp_path):
    path = tmp_path / "shares.csv"
    text = report_csv(report, path)
    assert path.read_bytes().decode("utf-8") == text
    assert text.splitlines()[0] == ",".join(COLUMNS)
