"""The jury comparison: configurations of a study side by side, ranked by agreement with the
clinicians, with paired differences against a baseline; grouping, caching and the CSV."""

import csv
import io

import pytest
from django.core.cache import cache

from alignment.engine.alt_test import NOT_TESTED
from alignment.services import rescoring as loop
from annotation.models import Assignment
from annotation.services.studies import StudySpec, study_create
from jury.models import ScoringJob
from jury.services import scoring
from jury.services.rubrics import current_versions
from tests.alignment.loop_support import constructed_study, lenient_jury, rescored
from tests.annotation.conftest import annotators
from tests.annotation.staff_support import annotate, full_scores
from tests.jury.services.builders import score_now
from tests.support.builders import enriched_set, launched_run, played

RESAMPLES = 200  # enough for intervals; the page uses 1,000


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.mark.django_db
def test_a_lenient_jury_ranks_below_the_demo_jury_on_every_rubric(scored_job):
    study = constructed_study(scored_job)
    rescored(study, lenient_jury())

    comparison = loop.jury_comparison(study, resamples=RESAMPLES)

    assert [c.original for c in comparison.configurations] == [True, False]
    assert len(comparison.rubrics) == 6
    for section in comparison.rubrics:
        best, worst = section.rows
        assert best.configuration.original and best.baseline and best.rank == 1
        assert worst.configuration.juries[0].name == "Lenient single judge" and worst.rank == 2
        assert best.agreement.jury_adjacent.value == 1.0
        assert worst.agreement.mean_signed_diff.value > best.agreement.mean_signed_diff.value
        assert not best.differences  # the baseline is not compared with itself


@pytest.mark.django_db
def test_paired_differences_against_the_baseline_have_intervals(scored_job):
    study = constructed_study(scored_job)
    rescored(study, lenient_jury())

    comparison = loop.jury_comparison(study, resamples=RESAMPLES)

    adjacent_drops = 0
    for section in comparison.rubrics:
        worse = section.rows[1]
        for metric, _, _ in loop.METRICS:
            difference = worse.differences[metric]
            assert difference.value is not None, difference.undefined
            assert difference.low <= difference.value <= difference.high
            assert difference.n_items == study.items.count()
        bias = worse.differences["mean_signed_diff"]
        assert bias.low > 0  # the lenient jury scores clearly higher than the baseline
        adjacent_drops += worse.differences["adjacent"].value < 0
    assert adjacent_drops >= 3  # two points above the clinicians wherever not capped


@pytest.mark.django_db
def test_the_baseline_can_be_any_configuration(scored_job):
    study = constructed_study(scored_job)
    rescored(study, lenient_jury())
    lenient_key = loop.study_configurations(study)[1].key

    comparison = loop.jury_comparison(study, baseline=lenient_key, resamples=RESAMPLES)

    assert comparison.baseline == lenient_key
    section = comparison.rubrics[0]
    original = next(row for row in section.rows if row.configuration.original)
    assert original.differences["mean_signed_diff"].value < 0  # demo minus lenient
    unknown = loop.jury_comparison(study, baseline="no-such-key", resamples=RESAMPLES)
    assert unknown.baseline == loop.ORIGINAL


@pytest.mark.django_db
def test_a_relaunched_configuration_is_one_configuration_and_other_jobs_stay_out(scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    jury = lenient_jury()
    first = rescored(study, jury)
    second = rescored(study, jury)
    # A job over one of the study's conversations and one outside it is not the study's.
    outside = ScoringJob.objects.create(run=scored_job.run, jury=jury)
    beyond = scored_job.run.conversations.exclude(study_items__study=study).first()
    outside.conversations.set([study.items.first().conversation, beyond])

    configurations = loop.study_configurations(study)

    assert [c.key for c in configurations][0] == loop.ORIGINAL
    (rescore,) = configurations[1:]
    assert [job.pk for job in rescore.jobs] == [first[0].pk, second[0].pk]
    assert outside.pk not in {job.pk for c in configurations for job in c.jobs}


@pytest.mark.django_db
def test_a_configuration_that_left_a_rubric_out_is_not_ranked_on_it(scored_job):
    study = constructed_study(scored_job)
    safety = study.rubric_versions.get(rubric_id="clinical_safety")
    rescored(study, lenient_jury(), versions=[safety])

    comparison = loop.jury_comparison(study, resamples=RESAMPLES)

    rows = {s.rubric.rubric_id: len(s.rows) for s in comparison.rubrics}
    assert rows["clinical_safety"] == 2
    assert all(count == 1 for rubric, count in rows.items() if rubric != "clinical_safety")


@pytest.mark.django_db
def test_the_comparison_is_computed_once_per_study_state(scored_job, monkeypatch):
    study = constructed_study(scored_job, annotated_items=3)
    computed = []
    original_compare = loop._compare
    monkeypatch.setattr(
        loop, "_compare", lambda *a, **k: computed.append(1) or original_compare(*a, **k)
    )

    loop.jury_comparison(study, resamples=RESAMPLES)
    loop.jury_comparison(study, resamples=RESAMPLES)
    assert len(computed) == 1
    Assignment.objects.filter(item__study=study).first().delete()  # the study changed
    loop.jury_comparison(study, resamples=RESAMPLES)
    assert len(computed) == 2
    rescored(study, lenient_jury())  # a new configuration
    loop.jury_comparison(study, resamples=RESAMPLES)
    assert len(computed) == 3


@pytest.mark.django_db
def test_synthetic_ratings_are_left_out_and_counted_unless_included(scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    Assignment.objects.filter(item__study=study).update(synthetic=True)

    left_out = loop.jury_comparison(study, resamples=RESAMPLES)
    included = loop.jury_comparison(study, resamples=RESAMPLES, include_synthetic=True)

    assert left_out.excluded["synthetic"] > 0
    assert left_out.rubrics[0].rows[0].agreement.jury_adjacent.value is None
    assert included.rubrics[0].rows[0].agreement.jury_adjacent.n_items == 2


@pytest.mark.django_db
def test_the_csv_has_one_ranked_row_per_rubric_and_configuration(scored_job):
    study = constructed_study(scored_job)
    rescored(study, lenient_jury())

    text = loop.comparison_csv(loop.jury_comparison(study, resamples=RESAMPLES))

    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 6 * 2
    assert list(rows[0]) == loop.CSV_COLUMNS
    baseline = [row for row in rows if row["baseline"] == "yes"]
    assert len(baseline) == 6 and all(row["rank"] == "1" for row in baseline)
    assert all(row["diff_adjacent"] == "" for row in baseline)
    lenient = [row for row in rows if row["jury"] == "Lenient single judge"]
    assert all(float(row["diff_mean_signed_diff_low"]) > 0 for row in lenient)
    assert all(row["n_items"] == str(study.items.count()) for row in rows)


@pytest.mark.django_db
def test_a_study_over_two_runs_is_rescored_by_one_job_per_run_forming_one_configuration(
    scored_job,
):
    second_run = played(launched_run(enriched_set(name="Second", size=2, sampler_seed=5)))
    second_job = score_now(scoring.scoring_launch(run=second_run, jury=scored_job.jury))
    spec = StudySpec(project_name="Two runs", name="Across runs", kind="target", sample_size=20)
    study = study_create(
        spec=spec, scoring_jobs=[scored_job, second_job], rubric_versions=current_versions()
    )
    person = annotators("clinical", 1, prefix="across")[0]
    for item in study.items.all():
        annotate(item, person, scores=full_scores(study, "clinical", score=3))
    runs = set(study.items.values_list("conversation__run", flat=True))
    assert len(runs) == 2

    jobs = rescored(study, lenient_jury())

    assert {job.run_id for job in jobs} == runs
    (rescore,) = loop.study_configurations(study)[1:]
    assert {job.pk for job in rescore.jobs} == {job.pk for job in jobs}
    comparison = loop.jury_comparison(study, resamples=RESAMPLES)
    safety = next(s for s in comparison.rubrics if s.rubric.rubric_id == "clinical_safety")
    assert [row.agreement.jury_adjacent.n_items for row in safety.rows] == [study.items.count()] * 2


@pytest.mark.django_db
def test_configurations_are_ranked_by_average_advantage_probability_beside_agreement(
    scored_job,
):
    study = constructed_study(scored_job)
    # One clinician of each track a point above the other: the demo jury sits between them,
    # the lenient one beyond the higher of them.
    for assignment in Assignment.objects.filter(
        item__study=study, annotator__username__endswith="-1"
    ):
        assignment.scores = {k: min(5, v + 1) for k, v in assignment.scores.items()}
        assignment.save(update_fields=["scores"])
    rescored(study, lenient_jury())

    comparison = loop.jury_comparison(study, resamples=RESAMPLES)

    for section in comparison.rubrics:
        best, worst = section.rows
        # The lenient jury (two points above the clinicians) loses to them more often.
        assert best.alt_test.advantage_probability.value > (
            worst.alt_test.advantage_probability.value
        )
        assert (best.advantage_rank, worst.advantage_rank) == (1, 2)
        assert best.alt_test.epsilon == study.alt_test_epsilon
        # A small study: nobody tested, and a design warning beside the verdict.
        assert best.alt_test.verdict == NOT_TESTED and best.alt_test.design_warning
    text = loop.comparison_csv(comparison)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["advantage_rank"] for row in rows} == {"1", "2"}
    assert all(row["advantage_probability"] and row["alt_test_verdict"] for row in rows)
    assert all(row["alt_test_design_warning"].startswith("The design is short") for row in rows)
