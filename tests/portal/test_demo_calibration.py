"""The demo calibrates its jury to the simulated clinicians of its calibration sample once:
the examples variant scored fold by fold, version 2 promoted, the sample and the target study
re-scored with it; a second call reuses all of it."""

import pytest

from accounts.services import demo_people_ensure
from alignment.services import calibration
from alignment.services.rescoring import rescore_jobs
from annotation.services.demo import CALIBRATION_SAMPLE, TARGET_STUDY, annotation_demo_ensure
from jury.models import Jury, ScoringJob
from jury.services import juries, scoring
from portal.services import demo
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db


def score_inline(job) -> None:
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)


def test_the_demo_calibrates_its_jury_once_and_measures_it_where_it_did_not_learn():
    demo_people_ensure()
    run = played(
        launched_run(
            enriched_set(name="Demo-like", size=8), models=("offline/careful", "offline/careless")
        )
    )
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    score_inline(job)
    studies = annotation_demo_ensure(
        job, calibration_size=2, target_size=4, prefilled=2, sample_size=10
    )
    sample = next(study for study in studies if study.name == CALIBRATION_SAMPLE)
    target = next(study for study in studies if study.name == TARGET_STUDY)
    waited = []

    version = demo.demo_calibration_ensure(score_inline, lambda *args: waited.append(args))

    assert version.version == 2 and version.learned_from["study_id"] == sample.pk
    assert set(version.learned_items) == set(sample.items.values_list("conversation_id", flat=True))
    assert version.calibration_data().parts == ("weights", "aggregate_map")
    folds = Jury.objects.filter(learned_from__purpose=juries.FOLD, learned_from__study_id=sample.pk)
    assert folds.count() == 5 and all(not j.learned_items & _held_out(j) for j in folds)
    assert {j.jury_id for j in rescore_jobs(sample)} >= {version.pk}
    assert any(j.jury_id == version.pk for j in rescore_jobs(target))
    for count, total, label in waited:
        assert count() == total > 0, label
    jobs_before = ScoringJob.objects.count()

    again = demo.demo_calibration_ensure(score_inline, lambda *args: None)

    assert again.pk == version.pk and ScoringJob.objects.count() == jobs_before
    page = calibration.calibration_page(sample, include_synthetic=True, resamples=50)
    assert page.examples_measured and page.n_items == 10


def _held_out(fold_jury) -> set[int]:
    return {
        c for job in fold_jury.jobs.all() for c in job.conversations.values_list("pk", flat=True)
    }
