"""Re-create a study from its archive, in any site: empty, or holding the original already.

Checks come first and write nothing: the zip directory (sizes, against a zip bomb), the
manifest (format, version, every member listed and present), the sha256 of every member, then
every row of every table (its fields, their types and choices, and that each reference names a
row of the archive). Only a clean archive is written, in one transaction, so a failure at any
point leaves the site as it was.

Everything gets new database ids, created in the archive's order (the original primary-key
order), so the imported study sorts its conversations and annotators as the original did.
Projects, juries, runs, benchmark sets and distributions say they are imported
(`Pilot (imported)`, then `Pilot (imported) (2)` when that is taken): the site finds them by
name (a new study joins the project of its name, `run_benchmark --name` resumes the run of its
name, the demo looks up its own set, run and jury), so an imported copy must never answer to
the original's name. Usernames get a suffix when taken, and a shared
theme whose name is taken becomes a theme of the imported project; an agent
configuration or rubric version with the same content as one already here is reused (a rubric
version whose number is taken by other content gets the next number). Public ids are kept when
none of them exists here yet, else all are new. People become inactive accounts without a
password. The study is locked and records the archive it came from and when.
"""

from __future__ import annotations

import re
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import AccountOrigin, Role, Track
from alignment.engine import archive as fmt
from alignment.models import Theme
from alignment.services.archive.tables import (
    ADDED_FIELDS,
    PEOPLE,
    SANDBOX_FIELDS,
    SANDBOXES,
    TABLES,
    Table,
    target_table,
    translate_json_ids,
)
from annotation.models import Assignment, Project, Study, StudyStatus
from benchmark.models import AgentConfig, BenchmarkSet, Conversation, Distribution, Run
from common.updates import values_update
from jury.engine.rubrics import RubricError, parse_rubric
from jury.models import Jury, RubricVersion

BATCH = 1000
MAX_PROBLEMS = 20
PEOPLE_MEMBER = f"data/{PEOPLE}.jsonl"
SANDBOX_MEMBER = f"data/{SANDBOXES}.jsonl"
REQUIRED = [PEOPLE_MEMBER, SANDBOX_MEMBER, *(t.member for t in TABLES)]
_VERSION_LINE = re.compile(r"^version:.*$", re.MULTILINE)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ImportedStudy:
    study: object
    rows: int
    people: list[str]  # usernames of the accounts created
    reused: dict[str, int] = field(default_factory=dict)  # table -> rows matched, not created


def archive_limits() -> fmt.Limits:
    unpacked = settings.ARCHIVE_UNPACKED_LIMIT_MB * 1_000_000
    return fmt.Limits(total_bytes=unpacked, member_bytes=unpacked)


def study_archive_import(
    source: str | Path | IO[bytes],
    *,
    archive_name: str,
    limits: fmt.Limits | None = None,
    progress: Progress | None = None,
    on_saved: Callable[[ImportedStudy], None] | None = None,
) -> ImportedStudy:
    """Check the whole archive, then write it all or nothing; ArchiveError names the problem.
    `on_saved` runs inside the same transaction (a job marks itself finished there, so a
    crash can never leave an imported study behind a job that says otherwise)."""
    with fmt.open_zip(source) as archive:
        fmt.check_directory(archive, limits or archive_limits())
        manifest = fmt.read_manifest(archive)
        missing = [name for name in REQUIRED if name not in manifest.members]
        if missing:
            raise fmt.ArchiveError(f"{', '.join(missing)}: missing from the manifest")
        fmt.verify_members(archive, manifest)
        loader = _Loader(archive, manifest, progress)
        loader.check()
        with transaction.atomic():
            imported = loader.save(archive_name=archive_name[:300])
            if on_saved is not None:
                on_saved(imported)
        return imported


class _Loader:
    def __init__(self, archive: zipfile.ZipFile, manifest: fmt.Manifest, progress):
        self.archive = archive
        self.manifest = manifest
        self.progress = progress
        # Both passes count: the check reads every row once, the save once more.
        self.total = 2 * sum(manifest.counts.get(t.member, 0) for t in TABLES)
        self.done = 0
        self.problems: list[str] = []
        self.known: dict[str, set] = {}  # table -> archive ids seen (check pass)
        self.new: dict[str, dict] = {}  # table -> archive id -> new pk (save pass)
        self.reused: dict[str, int] = {}
        self.created_people: list[str] = []

    # --- the check pass: nothing is written --------------------------------------------------

    def check(self) -> None:
        self.known[PEOPLE] = self._check_people()
        for table in TABLES:
            self.known[table.name] = set()
            for line, row in _table_rows(self.archive, table):
                try:
                    number = self._row_id(table, line, row, self.known[table.name])
                    self._clean(table, line, row, self._is_known)
                    self._check_table_rules(table, row)
                except fmt.ArchiveError as problem:
                    self._problem(str(problem))
                    continue
                self.known[table.name].add(number)
                self._step()
        for line, row in fmt.read_rows(self.archive, SANDBOX_MEMBER):
            self._check_sandbox(line, row)
        for name in ("studies", "projects"):
            if len(self.known[name]) != 1:
                self._problem(f"data/{name}.jsonl holds {len(self.known[name])} rows, not 1")
        if self.problems:
            raise fmt.ArchiveError("; ".join(self.problems))

    def _check_sandbox(self, line: int, row: dict) -> None:
        where = f"{SANDBOX_MEMBER} line {line}"
        if set(row) != {"conversation", "before", "after"}:
            self._problem(f"{where}: a row holds conversation, before and after")
        elif row["conversation"] not in self.known["conversations"]:
            self._problem(f"{where}: no conversation {row['conversation']!r}")
        elif not all(isinstance(row[k], dict | None) for k in ("before", "after")):
            self._problem(f"{where}: a sandbox snapshot is an object or null")

    def _step(self, rows: int = 1) -> None:
        before, self.done = self.done, self.done + rows
        if self.progress is not None and (before // 500 != self.done // 500):
            self.progress(self.done, self.total)

    def _problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def _check_people(self) -> set[str]:
        keys = set()
        for line, row in fmt.read_rows(self.archive, PEOPLE_MEMBER):
            where = f"{PEOPLE_MEMBER} line {line}"
            key, role, track = row.get("id"), row.get("role"), row.get("track", "")
            if not isinstance(key, str) or not re.fullmatch(r"[AS][1-9][0-9]*", key) or key in keys:
                self._problem(f"{where}: id {key!r} is not a new pseudonym like A1 or S1")
            elif role not in Role.values:
                self._problem(f"{where}: role {role!r} is not one of {', '.join(Role.values)}")
            elif (role == Role.ANNOTATOR) != (track in Track.values):
                self._problem(f"{where}: track {track!r} does not fit the role {role}")
            elif "username" in row and not _valid_username(row["username"]):
                self._problem(f"{where}: {row['username']!r} is not a valid username")
            keys.add(key)
        return keys

    def _is_known(self, target: str, value):
        if value not in self.known[target]:
            raise ValueError(f"names {target} {value!r}, which the archive does not hold")
        return value

    def _check_table_rules(self, table: Table, row: dict) -> None:
        if table.name == "rubric_versions":
            try:
                rubric = parse_rubric(row["yaml_text"])
            except RubricError as error:
                raise fmt.ArchiveError(f"{table.member} id {row['id']}: {error}") from None
            if rubric.id != row["rubric_id"] or rubric.fingerprint != row["fingerprint"]:
                raise fmt.ArchiveError(
                    f"{table.member} id {row['id']}: the YAML is not rubric {row['rubric_id']} "
                    "with the stated fingerprint"
                )

    # --- rows ----------------------------------------------------------------------------------

    def _row_id(self, table: Table, line: int, row: dict, seen: set) -> int:
        number = row.get("id")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1 or number in seen:
            raise fmt.ArchiveError(
                f"{table.member} line {line}: id {number!r} is not a new positive whole number"
            )
        expected = {"id", *(f.name for f in table.fields), *table.m2m}
        if set(row) != expected:
            missing, unknown = sorted(expected - set(row)), sorted(set(row) - expected)
            detail = "; ".join(
                part
                for part in (
                    missing and f"missing {', '.join(missing)}",
                    unknown and f"unknown {', '.join(unknown)}",
                )
                if part
            )
            raise fmt.ArchiveError(f"{table.member} line {line}: {detail}")
        return number

    def _clean(self, table: Table, line: int, row: dict, resolve, *, checked=False) -> dict:
        """Field attname -> Python value, references resolved by `resolve(table, id)`; a row
        `checked` already (the save pass) is only converted, not validated again."""
        values = {}
        translated = dict(row)
        try:
            translate_json_ids(table, translated, resolve)
        except (ValueError, KeyError, TypeError) as error:
            raise fmt.ArchiveError(f"{table.member} line {line}: {error}") from None
        for model_field in table.fields:
            raw = translated[model_field.name]
            try:
                if model_field.is_relation:
                    values[model_field.attname] = self._reference(model_field, raw, resolve)
                else:
                    values[model_field.attname] = (
                        model_field.to_python(raw) if checked else _field_value(model_field, raw)
                    )
            except (ValidationError, ValueError, TypeError) as error:
                text = "; ".join(error.messages) if isinstance(error, ValidationError) else error
                raise fmt.ArchiveError(
                    f"{table.member} line {line}: {model_field.name}: {text}"
                ) from None
        for name in table.m2m:
            target = target_table(table.m2m_field(name))
            if not isinstance(row[name], list):
                raise fmt.ArchiveError(f"{table.member} line {line}: {name} is not a list")
            try:
                values[name] = [resolve(target, value) for value in row[name]]
            except ValueError as error:
                raise fmt.ArchiveError(f"{table.member} line {line}: {name}: {error}") from None
        return values

    def _reference(self, model_field, raw, resolve):
        if raw is None:
            if not model_field.null:
                raise ValueError("is required")
            return None
        return resolve(target_table(model_field), raw)

    # --- the save pass -------------------------------------------------------------------------

    def save(self, *, archive_name: str) -> ImportedStudy:
        self.new[PEOPLE] = self._save_people()
        self.fresh_ids = {
            "conversations": not Conversation.objects.filter(
                public_id__in=self._public_ids("conversations")
            ).exists(),
            "assignments": not Assignment.objects.filter(
                public_id__in=self._public_ids("assignments")
            ).exists(),
        }
        self.archive_name = archive_name
        for table in TABLES:
            self._save_table(table)
            if table.name == "conversations":
                self._save_sandboxes()
        study = Study.objects.get(pk=next(iter(self.new["studies"].values())))
        rows = sum(len(ids) for ids in self.new.values())
        return ImportedStudy(study, rows, self.created_people, self.reused)

    def _resolve(self, target: str, value):
        return self.new[target][value]

    def _save_people(self) -> dict[str, int]:
        User = get_user_model()
        taken = set(User.objects.values_list("username", flat=True))
        people = {}
        for _, row in fmt.read_rows(self.archive, PEOPLE_MEMBER):
            wanted = row.get("username") or row["id"]
            username = fmt.unique_name(str(wanted)[:150], taken, separator="-", limit=150)
            taken.add(username)
            # Accounts are records of who did the work, never a way in: no password, inactive,
            # and never an admin whatever the archive says.
            role = Role.ANNOTATOR if row["role"] == Role.ANNOTATOR else Role.RESEARCHER
            user = User(
                username=username,
                role=role,
                track=row.get("track", ""),
                licensed=bool(row.get("licensed")),
                is_active=False,
                origin=AccountOrigin.STUDY_ARCHIVE,
            )
            user.set_unusable_password()
            user.save()
            people[row["id"]] = user.pk
            self.created_people.append(username)
        return people

    def _public_ids(self, table: str) -> list[str]:
        member = next(t.member for t in TABLES if t.name == table)
        return [row["public_id"] for _, row in fmt.read_rows(self.archive, member)]

    def _save_table(self, table: Table) -> None:
        ids = self.new.setdefault(table.name, {})
        batch: list[tuple[int, object, dict]] = []
        for line, row in _table_rows(self.archive, table):
            values = self._clean(table, line, row, self._resolve, checked=True)
            links = {name: values.pop(name) for name in table.m2m}
            obj = table.model(**values)
            existing = self._prepare(table, obj, row)
            if existing is not None:
                ids[row["id"]] = existing
                self.reused[table.name] = self.reused.get(table.name, 0) + 1
                continue
            batch.append((row["id"], obj, links))
            if len(batch) >= BATCH:
                self._flush(table, batch, ids)
        self._flush(table, batch, ids)

    def _flush(self, table: Table, batch: list, ids: dict) -> None:
        if not batch:
            return
        objects = [obj for _, obj, _ in batch]
        stamps = [
            f
            for f in table.fields
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        ]
        kept = [{f.attname: getattr(obj, f.attname) for f in stamps} for obj in objects]
        table.model.objects.bulk_create(objects)
        if stamps:  # bulk_create stamps "now"; the archive's times are the record
            _restore_times(table.model, [obj.pk for obj in objects], stamps, kept)
        for number, obj, links in batch:
            ids[number] = obj.pk
            for name, targets in links.items():
                getattr(obj, name).add(*targets)
        self._step(len(batch))
        batch.clear()

    def _save_sandboxes(self) -> None:
        ids, pending = self.new["conversations"], []
        for _, row in fmt.read_rows(self.archive, SANDBOX_MEMBER):
            conversation = Conversation(pk=ids[row["conversation"]])
            conversation.sandbox_initial, conversation.sandbox_final = row["before"], row["after"]
            pending.append(conversation)
            if len(pending) >= 100:
                Conversation.objects.bulk_update(pending, list(SANDBOX_FIELDS))
                pending.clear()
        if pending:
            Conversation.objects.bulk_update(pending, list(SANDBOX_FIELDS))

    def _prepare(self, table: Table, obj, row: dict) -> int | None:
        """Per-table rules before a row is created; returns the pk of a row reused instead."""
        prepare = getattr(self, f"_prepare_{table.name}", None)
        return prepare(obj) if prepare is not None else None

    def _prepare_rubric_versions(self, version: RubricVersion) -> int | None:
        same = RubricVersion.objects.filter(
            rubric_id=version.rubric_id, fingerprint=version.fingerprint
        ).values_list("pk", flat=True)
        if same:
            return same[0]
        stored = RubricVersion.objects.filter(rubric_id=version.rubric_id)
        version.is_current = version.is_current and not stored.exists()
        if stored.filter(version=version.version).exists():
            version.version = stored.aggregate(v=Max("version"))["v"] + 1
            version.yaml_text = _VERSION_LINE.sub(
                f"version: {version.version}", version.yaml_text, count=1
            )
            version.fingerprint = parse_rubric(version.yaml_text).fingerprint
        return None

    def _prepare_agent_configs(self, config: AgentConfig) -> int | None:
        same = AgentConfig.objects.filter(slug=config.slug, fingerprint=config.fingerprint)
        return same.values_list("pk", flat=True).first()

    def _prepare_conversations(self, conversation) -> None:
        if not self.fresh_ids["conversations"]:
            conversation.public_id = uuid.uuid4()

    def _prepare_assignments(self, assignment) -> None:
        if not self.fresh_ids["assignments"]:
            assignment.public_id = uuid.uuid4()

    def _prepare_juries(self, jury: Jury) -> None:
        _mark_imported(jury)

    def _prepare_projects(self, project: Project) -> None:
        _mark_imported(project)

    def _prepare_runs(self, run: Run) -> None:
        _mark_imported(run)

    def _prepare_benchmark_sets(self, benchmark_set: BenchmarkSet) -> None:
        _mark_imported(benchmark_set)

    def _prepare_distributions(self, distribution: Distribution) -> None:
        _mark_imported(distribution)

    def _prepare_studies(self, study) -> None:
        study.status = StudyStatus.LOCKED
        study.locked_at = study.locked_at or timezone.now()
        study.imported_from, study.imported_at = self.archive_name, timezone.now()

    def _prepare_themes(self, theme: Theme) -> None:
        # A shared theme whose name is taken here becomes a theme of the imported project: the
        # name may mean something else on this site, and the study must stay self-contained.
        if (
            theme.project_id is None
            and Theme.objects.filter(project__isnull=True, name=theme.name).exists()
        ):
            theme.project_id = next(iter(self.new["projects"].values()))


def _table_rows(archive: zipfile.ZipFile, table: Table):
    """(line, row) of a table's member; a field added to the format after the archive was
    written (tables.ADDED_FIELDS) takes its default when the row lacks it."""
    added = [f for f in table.fields if f.name in ADDED_FIELDS.get(table.name, ())]
    for line, row in fmt.read_rows(archive, table.member):
        for model_field in added:
            row.setdefault(model_field.name, model_field.get_default())
        yield line, row


def _mark_imported(row) -> None:
    """Rename `row` as imported, against every name of its model here (rows created earlier in
    this import included: two imported runs of the same name stay apart too)."""
    model = type(row)
    taken = set(model.objects.values_list("name", flat=True))
    row.name = fmt.imported_name(row.name, taken, limit=model._meta.get_field("name").max_length)


def _field_value(model_field, raw):
    """The Python value of one archived field: its type, null, choices and validators checked.
    Not Django's blank rule: forms apply it, and stored rows legitimately hold blank values
    (a trace event's `ok` is empty for a message)."""
    value = model_field.to_python(raw)
    if value is None:
        if not model_field.null:
            raise ValidationError("is required")
        return None
    allowed = {choice for choice, _ in model_field.flatchoices} if model_field.choices else None
    blank = model_field.blank and value in model_field.empty_values
    if allowed is not None and value not in allowed and not blank:
        raise ValidationError(f"{value!r} is not one of the allowed values")
    model_field.run_validators(value)
    return value


def _valid_username(name) -> bool:
    try:
        UnicodeUsernameValidator()(name)
    except (ValidationError, TypeError):
        return False
    return isinstance(name, str) and 0 < len(name) <= 140  # room for a "-2" suffix


def _restore_times(model, pks: list[int], stamps: list, kept: list[dict]) -> None:
    """Write the archived auto_now / auto_now_add times back, a few hundred rows a statement
    (common.updates: Django's bulk_update builds a CASE expression per row and value, which
    made this the slowest part of writing a paper-scale study)."""
    rows = (
        (pk, *(row[field.attname] for field in stamps)) for pk, row in zip(pks, kept, strict=True)
    )
    values_update(model, stamps, rows)
