"""Creating a study: validation, the sample, held-out calibration conversations."""

import pytest
from django.core.exceptions import ValidationError

from annotation.services.studies import StudySpec, panel_versions, study_create
from jury.services.rubrics import current_versions
from tests.annotation.conftest import new_study

pytestmark = pytest.mark.django_db


def test_a_study_samples_conversations_and_records_coverage(study):
    assert study.items.count() > 0
    coverage = study.coverage
    assert {c["model"] for c in coverage["cells"]} >= {"offline/careful · baseline"}
    assert sum(c["sampled"] for c in coverage["cells"]) == study.items.count() * len(
        coverage["rubrics"]
    )


def test_calibration_conversations_are_held_out_of_target_studies(scored_job):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    target = new_study(scored_job, name="Main study", size=8)
    held = set(calibration.items.values_list("conversation_id", flat=True))
    used = set(target.items.values_list("conversation_id", flat=True))
    assert held and not held & used


def test_each_calibration_round_draws_fresh_conversations(scored_job):
    first = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    second = new_study(scored_job, name="Round 2", kind="calibration", size=2, round_number=2)
    assert not set(first.items.values_list("conversation_id", flat=True)) & set(
        second.items.values_list("conversation_id", flat=True)
    )


def test_another_project_may_reuse_the_same_conversations(scored_job):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    other = new_study(scored_job, name="Other", size=8, project="Another project")
    assert set(calibration.items.values_list("conversation_id", flat=True)) <= set(
        other.items.values_list("conversation_id", flat=True)
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"overlap_clinical": 1}, "overlap_clinical"),
        ({"overlap_operational": 5}, "overlap_operational"),
        ({"sample_size": 0}, "sample_size"),
        ({"kind": "calibration", "round_number": None}, "round_number"),
        ({"name": "Careless agents, offline/careless"}, "name"),
        ({"project_name": " "}, "project_name"),
        ({"alt_test_epsilon": 1.5}, "alt_test_epsilon"),
        ({"drift_flag_points": 0}, "drift_flag_points"),
    ],
)
def test_a_study_that_cannot_be_fair_is_refused_with_the_field_named(scored_job, change, field):
    spec = StudySpec(**({"project_name": "P", "name": "S", "kind": "target", "sample_size": 4}
                        | change))  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        study_create(spec=spec, scoring_jobs=[scored_job], rubric_versions=current_versions())
    assert field in refused.value.message_dict


def test_a_study_without_jobs_is_refused(db):
    spec = StudySpec(project_name="P", name="S", kind="target", sample_size=4)
    with pytest.raises(ValidationError) as refused:
        study_create(spec=spec, scoring_jobs=[], rubric_versions=current_versions())
    assert "scoring_jobs" in refused.value.message_dict


def test_the_panel_holds_the_track_rubrics_then_the_realism_rubrics(study):
    clinical = [v.rubric_id for v in panel_versions(study, "clinical")]
    assert clinical == [
        "clinical_safety", "triage_quality", "clinical_helpfulness",
        "profile_realism", "conversation_realism",
    ]  # fmt: skip


def test_infeasible_cases_are_left_out_unless_asked_for(scored_job):
    from benchmark.models import BenchmarkEntry

    entries = BenchmarkEntry.objects.filter(conversations__run=scored_job.run).distinct()
    BenchmarkEntry.objects.filter(pk=entries[0].pk).update(infeasible=True)
    without = new_study(scored_job, name="Without", size=8)
    with_them = new_study(scored_job, name="With", size=8, include_infeasible=True,
                          project="Other")  # fmt: skip
    assert not without.items.filter(conversation__entry__infeasible=True).exists()
    assert with_them.items.filter(conversation__entry__infeasible=True).exists()


def test_a_target_study_with_nothing_left_to_sample_is_refused(scored_job):
    new_study(scored_job, name="Round 1", kind="calibration", size=50)
    with pytest.raises(ValidationError, match="held out"):
        new_study(scored_job, name="Main study", size=8)


def test_each_item_records_its_place_in_the_sampling_design(scored_job):
    from annotation.engine.sampling import Candidate, Design, home_cell, score_bin
    from jury.models import RubricResult

    study = new_study(scored_job, size=4)  # fewer than the conversations: chances below 1
    design = Design.from_coverage(study.coverage)
    strata = {s.key: s for s in design.strata}
    assert sum(s.drawn for s in design.strata) == study.items.count() == 4
    assert sum(s.size for s in design.strata) == study.coverage["candidates"]
    for item in study.items.select_related("conversation__run_agent"):
        means = dict(
            RubricResult.objects.filter(job=scored_job, conversation=item.conversation)
            .values_list("rubric_id", "mean")
        )  # fmt: skip
        assert item.jury_bins == {rubric: score_bin(means[rubric]) for rubric in item.jury_bins}
        assert set(item.jury_bins) == set(study.coverage["rubrics"])
        candidate = Candidate(item.conversation_id, item.conversation.run_agent.label, means)
        home = home_cell(candidate.cells(), design.available)
        assert (item.stratum["model"], item.stratum["rubric"], item.stratum["bin"]) == home
        stratum = strata[item.stratum["key"]]
        assert home in stratum.cells
        assert (item.cell_available, item.cell_drawn) == (stratum.size, stratum.drawn)
        assert item.inclusion_probability == stratum.drawn / stratum.size
        assert item.weight == pytest.approx(stratum.size / stratum.drawn)
    assert any(item.inclusion_probability < 1 for item in study.items.all())


def test_coverage_records_the_populations_jury_scores_per_cell(study, scored_job):
    from annotation.engine.sampling import score_bin
    from jury.models import RubricResult

    # The population: the job's complete results, infeasible cases left out as the study does.
    results = RubricResult.objects.filter(
        job=scored_job, conversation__entry__infeasible=False
    ).values_list("conversation__run_agent__label", "rubric_id", "mean", "passed")
    assert len({cell["available"] for cell in study.coverage["cells"]}) > 1
    for cell in study.coverage["cells"]:
        key = (cell["model"], cell["rubric"], cell["bin"])
        inside = [(mean, passed) for model, rubric, mean, passed in results
                  if (model, rubric, score_bin(mean)) == key]  # fmt: skip
        assert cell["available"] == len(inside)
        assert cell["jury_sum"] == pytest.approx(sum(mean for mean, _ in inside))
        assert cell["passed"] == sum(passed for _, passed in inside)


def test_the_alt_test_margin_and_drift_flag_are_study_settings(scored_job):
    default = new_study(scored_job, name="Defaults", size=4)
    assert (default.alt_test_epsilon, default.drift_flag_points) == (0.2, 0.5)
    chosen = new_study(scored_job, name="Crowd", size=4, project="Crowd", alt_test_epsilon=0.1,
                       drift_flag_points=0.75)  # fmt: skip
    assert (chosen.alt_test_epsilon, chosen.drift_flag_points) == (0.1, 0.75)
