"""Creating a benchmark set or a jury, publishing a calibration guide and exporting a study
archive from the command line leave who, when and what in the audit trail."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import CalibrationGuide
from audit.models import AuditEvent
from benchmark.models import BenchmarkSet
from benchmark.services import cases
from jury.models import Jury
from jury.services import rubrics
from tests.annotation.conftest import calibration, new_study  # noqa: F401 - fixture
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


def event(action: str, target) -> AuditEvent:
    return AuditEvent.objects.get(action=action, object_id=str(target.pk))


def test_creating_a_benchmark_set_in_the_browser_is_recorded(researcher_client, researcher):
    distribution = cases.distribution_default_ensure()
    form = {"name": "Audited set", "distribution": distribution.pk, "size": 3,
            "sampler_seed": 5, "generator_model": "offline/standard"}  # fmt: skip
    assert researcher_client.post(reverse("benchmark:set_new"), form).status_code == 302
    created = event("set.created", BenchmarkSet.objects.get(name="Audited set"))
    assert created.actor == researcher and created.object_type == "benchmark.BenchmarkSet"
    assert created.after["size"] == 3 and created.after["sampler_seed"] == 5
    assert created.after["generator_model"] == "offline/standard" and created.at is not None


def test_creating_a_jury_in_the_browser_is_recorded(researcher_client, researcher):
    form = {"name": "Audited jury", "judges": "offline/standard\noffline/strict",
            "pass_threshold": "3", "merge_mode": "mean"}  # fmt: skip
    form.update({f"weight_{rubric}": "1" for rubric in rubrics.current_weights()})
    assert researcher_client.post(reverse("jury:juries"), form).status_code == 302
    created = event("jury.created", Jury.objects.get(name="Audited jury"))
    assert created.actor == researcher
    assert created.after["judges"] == ["offline/standard", "offline/strict"]


def test_publishing_a_guide_is_recorded_once(researcher_client, researcher, calibration):  # noqa: F811
    guide = CalibrationGuide.objects.create(
        project=calibration.project, after_study=calibration, title="Round 1", body_markdown="x"
    )
    url = reverse("annotation:staff_guide_publish", args=[guide.pk])
    researcher_client.post(url)
    researcher_client.post(url)  # already published: nothing changes, nothing recorded
    published = event("guide.published", guide)
    guide.refresh_from_db()
    assert published.actor == researcher and published.after["study"] == calibration.pk
    assert published.after["published_at"] == guide.published_at.isoformat()


def test_exporting_an_archive_from_the_command_line_is_recorded(scored_job, tmp_path):  # noqa: F811
    study = new_study(scored_job, size=2)
    call_command("export_study", str(study.pk), "--out", str(tmp_path / "study.zip"), verbosity=0)
    exported = event("study.archive_exported", study)
    assert exported.actor is None and exported.note == "manage.py export_study"
    assert exported.after == {"file": str(tmp_path / "study.zip"), "with_usernames": False}
