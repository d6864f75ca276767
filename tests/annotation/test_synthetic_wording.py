"""The demo's synthetic clinician says "synthetic" and nothing of how its scores are made, and
the migration rewords what it wrote before."""

from importlib import import_module

import pytest
from django.apps import apps

from annotation.engine.simulated import simulated_clinician
from annotation.models import Assignment
from annotation.services import queue

pytestmark = pytest.mark.django_db
FORMER = (
    "Scripted simulated clinician (synthetic): score derived from the jury mean plus a fixed "
    "bias and noise."
)


def test_its_feedback_says_synthetic_and_not_how():
    words = simulated_clinician().feedback.lower()
    assert "synthetic" in words
    assert not [w for w in ("jury", "judge", "bias", "noise", "mean", "derived") if w in words]


def test_the_migration_rewords_what_it_wrote_before_and_nothing_else(study, clinicians):
    migration = import_module("annotation.migrations.0009_screen_synthetic_feedback_wording")
    synthetic, person = (queue.next_assignment(study=study, annotator=c) for c in clinicians[:2])
    Assignment.objects.filter(pk=synthetic.pk).update(
        synthetic=True, feedback={"clinical_safety": FORMER, "triage_quality": "kept"}
    )
    Assignment.objects.filter(pk=person.pk).update(feedback={"clinical_safety": FORMER})
    migration.reword(apps, None)
    assert Assignment.objects.get(pk=synthetic.pk).feedback == {
        "clinical_safety": simulated_clinician().feedback, "triage_quality": "kept",
    }  # fmt: skip
    assert Assignment.objects.get(pk=person.pk).feedback == {"clinical_safety": FORMER}
