"""A study world for the archive tests, built through the services that leave history: three
clinicians and three operators per item (scores near the jury), a reopened and resubmitted
annotation, an invalidated one, skips, a synthetic annotation, themes (one of the project, one
shared), a calibration guide with an example item, the two-judge demo jury and a re-score by a
one-judge jury restricted to the study."""

from __future__ import annotations

import io
import json
import zipfile

from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from accounts.models import Role, Track
from alignment.models import Theme
from alignment.services import themes
from alignment.services.archive import study_archive_import, study_archive_write
from annotation.models import Assignment, AssignmentStatus, CalibrationGuide
from annotation.services.annotations import (
    Draft,
    annotation_invalidate,
    annotation_reopen,
    annotation_submit,
)
from annotation.services.queue import assignment_skip
from tests.alignment.conftest import annotate_study, near_jury
from tests.alignment.loop_support import lenient_jury, rescored
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate
from tests.conftest import make_user


def build_world(job):
    """The study, and the researcher who acted on it."""
    researcher = make_user("archive-researcher", Role.RESEARCHER)
    study = new_study(job, name="Archive study", size=8, overlap=3, project="Archive project")
    people = {
        Track.CLINICAL: annotators(Track.CLINICAL, 3, prefix="arch-c"),
        Track.OPERATIONAL: annotators(Track.OPERATIONAL, 3, prefix="arch-o"),
    }
    done = annotate_study(study, job, people)
    _reopen_and_resubmit(done[0])
    annotation_invalidate(done[1], actor=researcher, reason="Scored the wrong conversation.")
    _skips(study)
    _synthetic(study, job)
    _themes(study, researcher)
    item = study.items.order_by("position").first()
    CalibrationGuide.objects.create(
        project=study.project, after_study=study, title="What a booking needs",
        body_markdown="Confirm **time and place** before booking.",
        examples=[{"item": item.pk, "note": "Booked before confirming."}],
        published_at=timezone.now(), created_by=researcher,
    )  # fmt: skip
    rescored(study, lenient_jury())
    return study, researcher


def _reopen_and_resubmit(assignment: Assignment) -> None:
    person = assignment.annotator
    reopened = annotation_reopen(assignment, actor=person)
    scores = dict(reopened.scores)
    first = next(iter(scores))
    scores[first] = 1 if scores[first] != 1 else 2
    draft = Draft(scores=scores, feedback={first: "Changed my mind on a second look."},
                  overall_comment="Resubmitted.")  # fmt: skip
    annotation_submit(reopened, draft=draft, version=reopened.version, actor=person)


def _skips(study) -> None:
    skipper = annotators(Track.CLINICAL, 1, prefix="arch-skip")[0]
    for item in study.items.order_by("position")[:2]:
        held = annotate(item, skipper, status=AssignmentStatus.RESERVED, scores={})
        assignment_skip(held, reason="Not my field.", actor=skipper)


def _synthetic(study, job) -> None:
    simulated = annotators(Track.OPERATIONAL, 1, prefix="arch-sim")[0]
    item = study.items.order_by("position").last()
    annotate(item, simulated, scores=near_jury(job, item, Track.OPERATIONAL, 1), synthetic=True)


def _themes(study, researcher) -> None:
    items = list(study.items.order_by("position")[:3])
    shared = Theme.objects.create(name="Shared: tool misuse", created_by=researcher)
    themes.theme_tag(item=items[0], rubric_id="clinical_safety", user=researcher,
                     name="Rubric ambiguity", note="Level 3 vs 4 unclear.")  # fmt: skip
    themes.theme_tag(item=items[1], rubric_id="clinical_safety", user=researcher,
                     name="rubric ambiguity")  # fmt: skip
    themes.theme_tag(item=items[2], rubric_id="triage_quality", user=researcher, theme=shared)


def archive_bytes(study, **options) -> bytes:
    buffer = io.BytesIO()
    study_archive_write(study, buffer, **options)
    return buffer.getvalue()


def import_bytes(data: bytes, name: str = "archive.zip", **options):
    return study_archive_import(io.BytesIO(data), archive_name=name, **options)


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rezip(contents: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def wipe_site() -> None:
    """Every row of every table gone (inside the test's transaction, rolled back after)."""
    if connection.vendor == "postgresql":
        # PostgreSQL refuses to TRUNCATE a table with deferred foreign-key checks pending.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    call_command("flush", interactive=False, verbosity=0)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


# What a run's manifest keeps through an import. The rest names the run as the exporting site
# holds it: its name, its set's id and name ("(imported)" after an import), and the
# conversations of the run there (an archive holds only the study's).
MANIFEST_KEPT = {
    "run": ("agents", "patient_model", "roster_model", "repetitions", "max_turns", "seed", "clock"),
    "seeds": ("run", "set_sampler", "provider_seeds"),
    "stored": ("agent_configs", "patient_prompt_version"),
}


def manifest_kept(text: bytes) -> dict:
    manifest = json.loads(text)
    kept = {
        section: {key: manifest[section][key] for key in keys}
        for section, keys in MANIFEST_KEPT.items()
    }
    distribution = manifest["stored"]["distribution"]
    kept["distribution"] = distribution and distribution["sha256"]
    for section in ("data_files", "models", "environment", "recorded"):
        kept[section] = manifest[section]
    return kept


def changed_fields(first: bytes, second: bytes) -> dict[str, set[str]]:
    """Data member -> the fields whose values differ between two archives of the same study
    (rows paired by line); a member whose rows differ in number counts as every field."""
    a, b = members(first), members(second)
    assert set(a) == set(b)
    changed: dict[str, set[str]] = {}
    for name in sorted(a):
        if name.startswith("runs/"):
            if manifest_kept(a[name]) != manifest_kept(b[name]):
                changed.setdefault(name, set()).add("*")
            continue
        if not name.startswith("data/"):
            if a[name] != b[name] and name != "manifest.json":
                changed.setdefault(name, set()).add("*")
            continue
        rows_a = [json.loads(line) for line in a[name].splitlines()]
        rows_b = [json.loads(line) for line in b[name].splitlines()]
        if len(rows_a) != len(rows_b):
            changed.setdefault(name, set()).add("*")
            continue
        for row_a, row_b in zip(rows_a, rows_b, strict=True):
            for key in set(row_a) | set(row_b):
                if row_a.get(key) != row_b.get(key):
                    changed.setdefault(name[5:-6], set()).add(key)
    return changed
