"""A fingerprint of everything a study's figures are computed from, for the caches of the
study report, the jury comparison and the clinician-corrected scores."""

from __future__ import annotations

import hashlib

from django.db.models import Count, Max, Sum

from alignment.engine.families import FAMILIES_FILE
from annotation.models import Adjudication, Assignment, AssignmentHistory, Study
from jury.models import JudgeScore, RubricResult

# What every cached study figure is computed with: the bootstrap's resamples and seed, and how
# long a result may stay cached (study_state changes with the data, so staleness is not a
# concern; the limit only frees memory).
RESAMPLES = 1000
SEED = 0
CACHE_SECONDS = 24 * 3600


def study_state(study: Study) -> str:
    """A fingerprint of everything the study's figures are computed from."""
    assignments = Assignment.objects.filter(item__study=study).aggregate(
        saved=Max("saved_at"),
        submitted=Max("submitted_at"),
        invalidated=Max("invalidated_at"),
        count=Count("pk"),
    )
    history = AssignmentHistory.objects.filter(assignment__item__study=study).aggregate(
        newest=Max("pk")
    )
    jobs = list(study.scoring_jobs.order_by("pk").values_list("pk", flat=True))
    judged = JudgeScore.objects.filter(job__in=jobs).aggregate(newest=Max("updated_at"))
    results = RubricResult.objects.filter(job__in=jobs).count()
    versions = sorted(study.rubric_versions.values_list("pk", flat=True))
    # The analysis settings, and the model families file researchers may edit.
    settings = [study.alt_test_epsilon, study.drift_flag_points, FAMILIES_FILE.read_bytes()]
    adjudicated = Adjudication.objects.filter(item__study=study).aggregate(
        newest=Max("adjudicated_at"), count=Count("pk")
    )
    # A second phase adds items and changes every item's inclusion probability.
    items = study.items.aggregate(count=Count("pk"), chances=Sum("inclusion_probability"))
    state = [assignments, history, jobs, judged, results, versions, settings, adjudicated, items]
    return hashlib.sha256(repr(state).encode()).hexdigest()[:24]
