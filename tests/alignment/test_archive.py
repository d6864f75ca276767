"""The study archive: export, wipe, import, recompute - the same tables to the last digit; a
second import beside the original; refusals that save nothing."""

import hashlib
import io
import json
import os
import uuid
import zipfile
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from accounts.models import AccountOrigin, Role
from alignment.engine import archive as fmt
from alignment.engine.bootstrap import SAME_IN_EVERY_RESAMPLE
from alignment.services.archive import ArchiveError, study_tables
from alignment.services.archive.tables import CHANGED_BY_IMPORT, RENEWED_WHEN_TAKEN
from alignment.services.design import RECONSTRUCTED, RECORDED
from annotation.models import (
    Assignment,
    AssignmentHistory,
    CalibrationGuide,
    Study,
    StudyItem,
    StudyStatus,
)
from annotation.services.guides import published_guide
from annotation.services.queue import StudyClosed, next_assignment
from annotation.services.worklist import annotator_studies
from benchmark.models import BenchmarkSet, Conversation, Distribution, Run, TraceEvent
from jury.models import JudgeScore, Jury, RubricVersion
from tests.alignment.archive_support import (
    archive_bytes,
    build_world,
    changed_fields,
    import_bytes,
    members,
    rezip,
    wipe_site,
)
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def world_study(scored_job):
    return build_world(scored_job)[0]


@pytest.fixture
def archive(world_study):
    return archive_bytes(world_study)


def site_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Study, Assignment, AssignmentHistory, Conversation, TraceEvent,
                      JudgeScore, RubricVersion, User)
    }  # fmt: skip


# --- the round trip ----------------------------------------------------------------------------


def test_the_archive_holds_the_tables_the_site_computes(world_study, archive):
    stored = members(archive)
    tables = study_tables(world_study)
    assert {name: stored[name].decode() for name in tables} == tables
    # Real figures, not blanks; an interval of zero width says why.
    assert f"100% (zero width: {SAME_IN_EVERY_RESAMPLE})" in tables["tables/agreement.csv"]


def test_an_empty_site_reproduces_the_tables_to_the_last_digit(world_study, archive):
    before = study_tables(world_study)
    history = AssignmentHistory.objects.filter(assignment__item__study=world_study).count()
    wipe_site()
    assert site_counts() == dict.fromkeys(site_counts(), 0)
    imported = import_bytes(archive).study
    assert study_tables(imported) == before
    assert AssignmentHistory.objects.filter(assignment__item__study=imported).count() == history
    manifest = json.loads(members(archive)["manifest.json"])
    assert Assignment.objects.count() == manifest["counts"]["data/assignments.jsonl"]
    assert TraceEvent.objects.count() == manifest["counts"]["data/events.jsonl"]


def test_the_imported_study_is_locked_and_says_where_it_came_from(archive):
    wipe_site()
    study = import_bytes(archive, name="paper-2026.zip").study
    assert study.status == StudyStatus.LOCKED
    assert study.imported_from == "paper-2026.zip"
    assert study.imported_at is not None


def test_export_import_export_changes_only_what_the_import_changes(archive):
    wipe_site()
    again = archive_bytes(import_bytes(archive).study)
    assert changed_fields(archive, again) == {k: set(v) for k, v in CHANGED_BY_IMPORT.items()}


def test_a_site_holding_the_original_gets_a_second_identical_study(world_study, archive):
    before = study_tables(world_study)
    imported = import_bytes(archive).study
    assert Study.objects.count() == 2 and imported.pk != world_study.pk
    assert study_tables(imported) == before
    assert study_tables(world_study) == before
    assert imported.project.name == "Archive project (imported)"
    original = set(Conversation.objects.filter(study_items__study=world_study))
    assert original.isdisjoint(Conversation.objects.filter(study_items__study=imported))
    changed = changed_fields(archive, archive_bytes(imported))
    allowed = {k: set(v) for k, v in CHANGED_BY_IMPORT.items()}
    for table, fields in RENEWED_WHEN_TAKEN.items():
        allowed.setdefault(table, set()).update(fields)
    unexpected = {table: fields - allowed.get(table, set()) for table, fields in changed.items()}
    assert {table: fields for table, fields in unexpected.items() if fields} == {}
    assert {"conversations", "assignments", "projects", "juries"} <= set(changed)


def test_rubric_versions_with_the_same_content_are_reused(archive):
    versions = RubricVersion.objects.count()
    result = import_bytes(archive)
    assert RubricVersion.objects.count() == versions
    assert result.reused["rubric_versions"] == versions


def test_a_second_import_suffixes_names_again(archive):
    import_bytes(archive)
    third = import_bytes(archive).study
    assert third.project.name == "Archive project (imported) (2)"


def test_everything_found_by_name_says_it_is_imported(world_study, archive):
    """The site looks projects, juries, runs, sets and distributions up by name (a new study
    joins the project of its name, run_benchmark --name resumes the run of its name): an
    imported copy never answers to the original's name, on an empty site or beside it."""
    originals = named_things(world_study)
    wipe_site()
    imported = named_things(import_bytes(archive).study)
    assert imported == {kind: {f"{name} (imported)" for name in names}
                        for kind, names in originals.items()}  # fmt: skip
    assert all(originals.values())
    again = named_things(import_bytes(archive_bytes(Study.objects.get())).study)
    assert again == {kind: {f"{name} (2)" for name in names} for kind, names in imported.items()}


def named_things(study) -> dict[str, set[str]]:
    conversations = Conversation.objects.filter(study_items__study=study)
    runs = Run.objects.filter(conversations__in=conversations).distinct()
    sets = BenchmarkSet.objects.filter(runs__in=runs).distinct()
    return {
        "project": {study.project.name},
        "juries": set(Jury.objects.filter(jobs__studies=study).values_list("name", flat=True)),
        "runs": set(runs.values_list("name", flat=True)),
        "sets": set(sets.values_list("name", flat=True)),
        "distributions": set(
            Distribution.objects.filter(sets__in=sets).values_list("name", flat=True)
        ),
    }


# --- people and blinding -----------------------------------------------------------------------


def test_people_are_pseudonyms_unless_usernames_are_asked_for(world_study):
    plain = members(archive_bytes(world_study))["data/people.jsonl"].decode()
    assert "arch-c" not in plain and '"id":"A1"' in plain
    named = members(archive_bytes(world_study, with_usernames=True))["data/people.jsonl"]
    assert b'"username":"arch-c-0"' in named


def test_imported_people_are_inactive_and_cannot_log_in(client, archive):
    result = import_bytes(archive)
    people = User.objects.filter(username__in=result.people)
    assert people.count() == len(result.people) > 0
    assert not any(p.is_active or p.has_usable_password() for p in people)
    assert set(people.values_list("origin", flat=True)) == {AccountOrigin.STUDY_ARCHIVE}
    client.post(reverse("login"), {"username": result.people[0], "password": PASSWORD})
    assert "_auth_user_id" not in client.session


def test_annotators_of_the_original_site_see_nothing_new(client, world_study, archive):
    annotator = Assignment.objects.filter(item__study=world_study).first().annotator
    before = annotator_studies(annotator)
    imported = import_bytes(archive).study
    assert annotator_studies(annotator) == before
    with pytest.raises(StudyClosed):
        next_assignment(study=imported, annotator=annotator)
    client.force_login(annotator)
    for url in (reverse("annotation:staff_study", args=[imported.pk]),
                reverse("alignment:report", args=[imported.pk])):  # fmt: skip
        assert client.get(url).status_code == 403


# --- refusals: nothing is saved ----------------------------------------------------------------


def refused(data: bytes, **options) -> str:
    before = site_counts()
    with pytest.raises(ArchiveError) as error:
        import_bytes(data, **options)
    assert site_counts() == before
    return str(error.value)


def resigned(contents: dict[str, bytes]) -> bytes:
    """The archive with its manifest's digests recomputed: a consistent, hand-made archive."""
    manifest = json.loads(contents["manifest.json"])
    for name, entry in manifest["members"].items():
        entry["bytes"] = len(contents[name])
        entry["sha256"] = hashlib.sha256(contents[name]).hexdigest()
    return rezip(contents | {"manifest.json": json.dumps(manifest).encode()})


def test_a_changed_member_is_refused_by_its_digest(archive):
    contents = members(archive)
    contents["data/assignments.jsonl"] = contents["data/assignments.jsonl"].replace(b'":4', b'":5')
    assert "data/assignments.jsonl does not match its sha256" in refused(rezip(contents))


def test_a_truncated_archive_is_refused(archive):
    assert "truncated" in refused(archive[: len(archive) // 2])


def test_a_zip_that_is_not_a_study_archive_is_refused():
    assert "manifest.json is missing" in refused(rezip({"notes.txt": b"hello"}))
    foreign = json.dumps({"format": "something-else", "format_version": 1}).encode()
    assert "not a study archive" in refused(rezip({"manifest.json": foreign}))
    assert "not a zip archive" in refused(b"%PDF-1.4 not a zip")


def test_another_format_version_is_refused(archive):
    contents = members(archive)
    manifest = json.loads(contents["manifest.json"])
    manifest["format_version"] = 99
    contents["manifest.json"] = json.dumps(manifest).encode()
    assert "format version 99" in refused(rezip(contents))


def test_a_member_missing_from_the_zip_is_refused(archive):
    contents = members(archive)
    del contents["data/events.jsonl"]
    assert "data/events.jsonl: listed in the manifest but missing" in refused(rezip(contents))


def test_a_zip_bomb_is_refused_from_the_directory(archive, settings):
    squeezed = members(archive) | {"tables/padding.txt": b"0" * 5_000_000}
    assert "compressed" in refused(rezip(squeezed))
    settings.ARCHIVE_UNPACKED_LIMIT_MB = 1
    large = members(archive) | {"tables/padding.txt": os.urandom(1_500_000)}
    assert "over the 1 MB a member may hold: refused as a zip bomb" in refused(rezip(large))


def test_a_bad_row_is_named_with_its_member_line_and_field(archive):
    contents = members(archive)
    rows = contents["data/assignments.jsonl"].splitlines()
    bad = json.loads(rows[2]) | {"status": "bogus"}
    rows[2] = json.dumps(bad).encode()
    contents["data/assignments.jsonl"] = b"\n".join(rows) + b"\n"
    problem = refused(resigned(contents))
    assert "data/assignments.jsonl line 3: status: 'bogus' is not one of the allowed" in problem


def test_a_reference_to_a_row_the_archive_lacks_is_refused(archive):
    contents = members(archive)
    rows = contents["data/study_items.jsonl"].splitlines()
    rows[0] = json.dumps(json.loads(rows[0]) | {"conversation": 999}).encode()
    contents["data/study_items.jsonl"] = b"\n".join(rows) + b"\n"
    problem = refused(resigned(contents))
    assert "data/study_items.jsonl line 1: conversation: names conversations 999" in problem


def test_a_sandbox_that_is_not_a_snapshot_is_refused(archive):
    contents = members(archive)
    rows = contents["data/sandboxes.jsonl"].splitlines()
    rows[0] = json.dumps(json.loads(rows[0]) | {"after": [1, 2]}).encode()
    contents["data/sandboxes.jsonl"] = b"\n".join(rows) + b"\n"
    problem = refused(resigned(contents))
    assert "data/sandboxes.jsonl line 1: a sandbox snapshot is an object or null" in problem


def test_an_unknown_person_role_is_refused(archive):
    contents = members(archive)
    contents["data/people.jsonl"] = contents["data/people.jsonl"].replace(
        b'"role":"researcher"', b'"role":"superuser"'
    )
    assert "role 'superuser'" in refused(resigned(contents))


def test_a_username_that_is_not_one_is_refused(world_study):
    contents = members(archive_bytes(world_study, with_usernames=True))
    contents["data/people.jsonl"] = contents["data/people.jsonl"].replace(
        b'"username":"arch-c-0"', b'"username":"<script>"'
    )
    assert "'<script>' is not a valid username" in refused(resigned(contents))


def test_the_people_member_never_makes_an_admin_account(archive):
    contents = members(archive)
    contents["data/people.jsonl"] = contents["data/people.jsonl"].replace(
        b'"role":"researcher"', f'"role":"{Role.ADMIN}"'.encode()
    )
    result = import_bytes(resigned(contents))
    created = User.objects.filter(username__in=result.people)
    assert not created.filter(is_active=True).exists()
    assert not created.filter(is_superuser=True).exists()
    assert set(created.values_list("role", flat=True)) == {Role.ANNOTATOR, Role.RESEARCHER}


def test_the_zip_directory_check_needs_no_decompression():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bomb:
        bomb.writestr("manifest.json", b"\0" * 3_000_000)
    limits = fmt.Limits(total_bytes=10**9, member_bytes=10**9)
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as opened,
        pytest.raises(ArchiveError, match="compressed .*:1"),
    ):
        fmt.check_directory(opened, limits)


def test_work_saved_while_the_archive_is_written_is_left_out_whole(world_study, monkeypatch):
    """An open study keeps changing during an export: a row made after the table it points
    at was written is left out, never written with a dangling reference."""
    from alignment.services.archive import export
    from annotation.models import AssignmentHistory as History

    real = export._table_member

    def meanwhile(archive, table, *args):
        if table.name == "assignment_history":  # assignments are written; a new one arrives
            late = Assignment.objects.filter(item__study=world_study).first()
            late.pk, late.public_id, late.slot = None, uuid.uuid4(), None
            late.annotator = User.objects.create(username="late", role=Role.ANNOTATOR,
                                                 track=late.track)  # fmt: skip
            late.save()
            History.objects.create(assignment=late, kind="submit", actor=late.annotator)
        return real(archive, table, *args)

    monkeypatch.setattr(export, "_table_member", meanwhile)
    data = archive_bytes(world_study)
    history = [json.loads(r) for r in members(data)["data/assignment_history.jsonl"].splitlines()]
    assert (
        len(history)
        == AssignmentHistory.objects.filter(assignment__item__study=world_study).count() - 1
    )
    import_bytes(data)  # and the archive is whole
    assert b"not in the archive" in members(data)["tables/report.json"]


# --- calibration guides ------------------------------------------------------------------------


def guide(study, title: str, published_at, examples=()):
    return CalibrationGuide.objects.create(
        project=study.project, after_study=study, title=title, body_markdown=f"{title}: *why*.",
        examples=list(examples), published_at=published_at,
    )  # fmt: skip


def guide_rows(study) -> list[tuple]:
    return sorted(
        (g.title, g.body_markdown, g.published_at, json.dumps(g.examples, sort_keys=True))
        for g in CalibrationGuide.objects.filter(project=study.project)
    )


def test_the_guides_the_annotators_saw_go_with_the_study_and_come_back(world_study):
    """The guide in force when the study opened (written after another round of the project)
    and one published while it was open travel with it; an older guide, superseded before
    the study opened, and an unpublished draft do not."""
    opened = timezone.now() - timedelta(days=1)
    Study.objects.filter(pk=world_study.pk).update(created_at=opened)
    world_study.refresh_from_db()
    round_one = Study.objects.create(project=world_study.project, name="Round 1",
                                     kind="calibration", round_number=1, sample_size=1)  # fmt: skip
    conversation = world_study.items.order_by("position").last().conversation
    example = StudyItem.objects.create(study=round_one, conversation=conversation, position=0)
    guide(round_one, "Superseded", opened - timedelta(days=9))
    in_force = guide(round_one, "Read the record first", opened - timedelta(days=2),
                     [{"item": example.pk, "note": "Missed the allergy."}])  # fmt: skip
    guide(round_one, "Draft", None)
    guide(round_one, "Mid-study update", opened + timedelta(hours=2))
    data = archive_bytes(world_study)
    expected = sorted(["Read the record first", "Mid-study update", "What a booking needs"])
    seen = [g.title for g in CalibrationGuide.objects.filter(title__in=expected)]
    original = [row for row in guide_rows(world_study) if row[0] in seen]
    shown = published_guide(world_study.project).title

    wipe_site()
    imported = import_bytes(data).study
    rows = guide_rows(imported)
    assert [row[0] for row in rows] == sorted(expected)
    kept = {row[0]: row for row in rows}
    by_title = {row[0]: row for row in original}
    for title in ("Mid-study update", "What a booking needs"):
        assert kept[title][:3] == by_title[title][:3]  # text and publication time
    restored = CalibrationGuide.objects.get(project=imported.project, title=in_force.title)
    assert restored.published_at == in_force.published_at and restored.after_study is None
    assert restored.examples == [{
        "item": None, "note": "Missed the allergy.", "round": "Round 1",
        "condition": example.conversation.entry.condition,
        "request": example.conversation.entry.task_subcategory,
    }]  # fmt: skip
    own = CalibrationGuide.objects.get(project=imported.project, title="What a booking needs")
    assert own.after_study == imported
    assert own.examples[0]["item"] == imported.items.order_by("position").first().pk
    assert published_guide(imported.project).title == shown
    again = archive_bytes(imported)
    assert members(again)["data/calibration_guides.jsonl"].decode().splitlines() == (
        members(data)["data/calibration_guides.jsonl"].decode().splitlines()
    )


def test_an_archive_written_before_assignments_had_the_imported_mark_still_imports(archive):
    contents = members(archive)
    rows = [json.loads(line) for line in contents["data/assignments.jsonl"].splitlines()]
    assert all(row.pop("imported") is False for row in rows)
    contents["data/assignments.jsonl"] = b"".join(fmt.json_line(row) for row in rows)
    wipe_site()
    study = import_bytes(resigned(contents)).study
    assert Assignment.objects.filter(item__study=study).count() == len(rows)
    assert not Assignment.objects.filter(imported=True).exists()


def test_the_tables_beyond_the_paper_are_archived_with_pseudonyms(world_study, archive):
    stored = members(archive)
    for table in ("weighted", "alt-test", "corrected", "judge-bias", "annotators"):
        for suffix in ("csv", "md"):
            assert f"tables/{table}.{suffix}" in stored
    people = [json.loads(line) for line in stored["data/people.jsonl"].splitlines()]
    assert people and all("username" not in person for person in people)
    usernames = set(User.objects.values_list("username", flat=True))
    for name in ("tables/alt-test.csv", "tables/annotators.csv", "tables/report.json"):
        text = stored[name].decode()
        assert not any(f",{username}," in text or f'"{username}"' in text for username in usernames)
    assert "\r\nA1," in stored["tables/annotators.csv"].decode()
    report = json.loads(stored["tables/report.json"])
    assert report["population_weights"] == RECORDED
    first = report["rubrics"][0]
    assert first["agreement_population_weighted"]["weighted"] is True
    assert first["alt_test"]["clinicians"][0]["rater"].startswith("A")
    assert report["clinician_corrected"] and report["annotator_quality"]


def test_an_archive_written_before_the_design_was_recorded_is_weighted_from_its_coverage(
    world_study,
):
    from alignment.services.reports import ReportFilters, compute_report

    # A study drawn before the sampler recorded any design: items without their place in it,
    # coverage cells with sizes and counts only.
    for item in world_study.items.all():
        item.stratum = {k: item.stratum[k] for k in ("model", "rubric", "bin")}
        item.jury_bins, item.inclusion_probability = {}, None
        item.cell_available = item.cell_drawn = None
        item.save()
    keep = ("model", "rubric", "bin", "available", "sampled")
    world_study.coverage = {
        **{k: v for k, v in world_study.coverage.items() if k != "design"},
        "cells": [{k: cell[k] for k in keep} for cell in world_study.coverage["cells"]],
    }
    world_study.save(update_fields=["coverage"])
    original = study_tables(world_study)
    contents = members(archive_bytes(world_study))
    items = [json.loads(line) for line in contents["data/study_items.jsonl"].splitlines()]
    for row in items:
        for name in ("jury_bins", "cell_available", "cell_drawn", "inclusion_probability"):
            row.pop(name)
    contents["data/study_items.jsonl"] = b"".join(fmt.json_line(row) for row in items)
    (study_row,) = [json.loads(line) for line in contents["data/studies.jsonl"].splitlines()]
    study_row.pop("alt_test_epsilon")
    study_row.pop("drift_flag_points")
    contents["data/studies.jsonl"] = fmt.json_line(study_row)
    wipe_site()
    study = import_bytes(resigned(contents)).study
    assert study.alt_test_epsilon == 0.2 and study.drift_flag_points == 0.5
    assert not study.items.filter(inclusion_probability__isnull=False).exists()
    report = compute_report(study, ReportFilters(), resamples=20)
    assert report.weighted and report.design_source == RECONSTRUCTED
    # This study drew every conversation its jobs scored, so the archive holds its whole
    # population: weights and corrected scores come back as the site computed them.
    again = study_tables(study)
    for table in ("tables/weighted.csv", "tables/corrected.csv", "tables/alt-test.csv"):
        assert again[table] == original[table], table


def test_an_archive_written_before_studies_had_the_guide_setting_still_imports(archive):
    contents = members(archive)
    (row,) = [json.loads(line) for line in contents["data/studies.jsonl"].splitlines()]
    assert row.pop("guide_in_target") is False
    contents["data/studies.jsonl"] = fmt.json_line(row)
    wipe_site()
    study = import_bytes(resigned(contents)).study
    assert study.guide_in_target is False
