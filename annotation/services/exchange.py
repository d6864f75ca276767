"""Export a study's annotations as CSV / JSONL, and import annotations scored elsewhere.

Export: one row per submitted assignment x scored rubric (format: annotation.engine.exchange),
with the rubric version, the trace events the feedback points at, and the practice, synthetic
and invalidated marks; `pseudonymise` replaces usernames with A01, A02, ...

Import (a study scored on paper or in a spreadsheet): rows name items by the conversation's
public id and people by username. The whole file is checked in one pass, row by row, and every
problem is named with its line (a score of 7 does not hide that the same row, or another, names
a conversation outside the study); only a clean file is saved, in one transaction. Unknown
people are created as inactive annotators with an unusable password, marked as imported (the
track from the row; licensed from the row, else licensed). A row naming an existing account of
a real person (one this site made, not an import) is saved as that person's work only when
the researcher confirmed exactly those accounts: nobody's name goes on work they may not have
done without someone saying so. Each imported assignment is submitted, marked imported, takes
a seat in the item's overlap like one served by the queue, and gets an IMPORT history entry;
the import is in the audit trail. Practice is derived as the queue derives it: an unlicensed
annotator's work in a calibration round is practice.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import AccountOrigin, Role, Track
from annotation.engine import exchange
from annotation.engine.exchange import ImportRow, UploadError
from annotation.models import (
    Assignment,
    AssignmentStatus,
    HistoryKind,
    Study,
    StudyItem,
)
from annotation.services.history import annotation_snapshot, history_add
from annotation.services.queue import queue_key
from annotation.services.studies import panel_versions
from audit.services import audit_record
from benchmark.engine.parquet_export import CONTENT_TYPE as PARQUET
from benchmark.engine.parquet_export import Column, parquet_chunks
from benchmark.models import TraceEvent

FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}
EXPORT_FORMATS = (*FORMATS, "parquet")
# Parquet beside them (binary: exported, not imported): the exchange columns, typed.
PARQUET_COLUMNS = tuple(
    Column(name, exchange.COLUMN_KINDS.get(name, "string")) for name in exchange.COLUMNS
)


# --- export ------------------------------------------------------------------------------------


def export_rows(study: Study, *, pseudonymise: bool = False) -> list[dict]:
    assignments = list(
        Assignment.objects.filter(item__study=study, status=AssignmentStatus.SUBMITTED)
        .select_related("annotator", "item__conversation")
        .order_by("item__position", "annotator__username")
    )
    names = {a.annotator.username for a in assignments}
    alias = exchange.pseudonyms(names) if pseudonymise else {n: n for n in names}
    panels = {track: panel_versions(study, track) for track in Track.values}
    base = {
        "study": study.name,
        "project": study.project.name,
        "kind": study.kind,
        "round": study.round_number,
    }
    return [
        base | _row(a, version, alias[a.annotator.username])
        for a in assignments
        for version in panels.get(a.track, [])
        if version.rubric_id in a.scores
    ]


def _row(assignment: Assignment, version, annotator: str) -> dict:
    rubric = version.rubric_id
    return {
        "conversation": str(assignment.item.conversation.public_id),
        "assignment": str(assignment.public_id),
        "annotator": annotator,
        "track": assignment.track,
        "licensed": assignment.annotator.licensed,
        "practice": assignment.practice,
        "synthetic": assignment.synthetic,
        "imported": assignment.imported,
        "rubric_id": rubric,
        "rubric_version": version.version,
        "score": assignment.scores[rubric],
        "feedback": assignment.feedback.get(rubric, ""),
        "event_ids": list(assignment.event_links.get(rubric, [])),
        "overall_comment": assignment.overall_comment,
        "submitted_at": assignment.submitted_at.isoformat() if assignment.submitted_at else None,
        "seconds_on_task": assignment.seconds_on_task,
        "invalidated": assignment.is_invalidated,
        "invalidated_reason": assignment.invalidated_reason,
    }


def export_file(study: Study, fmt: str, *, pseudonymise: bool = False):
    """The annotation export in `fmt` (csv, jsonl or parquet, streamed a row group at a time)
    and its content type. Synthetic clinicians' work is marked in every row (`synthetic`)
    and, when the study has any, at the top: a CSV comment line, Parquet metadata."""
    if fmt == "parquet":
        rows = export_rows(study, pseudonymise=pseudonymise)
        metadata = {"synthetic": exchange.SYNTHETIC_NOTE} if has_synthetic_work(study) else None
        return parquet_chunks(rows, PARQUET_COLUMNS, metadata=metadata), PARQUET
    if fmt not in FORMATS:
        raise ValueError(f"export formats: {', '.join(EXPORT_FORMATS)}")
    return export_text(study, fmt, pseudonymise=pseudonymise), f"{FORMATS[fmt]}; charset=utf-8"


def export_text(study: Study, fmt: str, *, pseudonymise: bool = False) -> str:
    rows = export_rows(study, pseudonymise=pseudonymise)
    if fmt != "csv":
        return exchange.to_jsonl(rows)  # JSON lines hold no comment: each row says it
    note = exchange.SYNTHETIC_NOTE if has_synthetic_work(study) else ""
    return exchange.write_csv(rows, note=note)


def has_synthetic_work(study: Study) -> bool:
    """Whether the export holds a synthetic clinician's submitted work."""
    return Assignment.objects.filter(
        item__study=study, status=AssignmentStatus.SUBMITTED, synthetic=True
    ).exists()


# --- import ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NamedAccount:
    """An existing account of a real person that rows of the file would be saved under."""

    username: str
    full_name: str
    lines: str


class ImportRejected(Exception):
    """Nothing was saved: the file's problems, and the existing accounts its rows name that
    were not confirmed (both listed in full)."""

    def __init__(self, problems: list[str], unconfirmed: list[NamedAccount] | None = None):
        unconfirmed = unconfirmed or []
        super().__init__(f"{len(problems)} problem(s), {len(unconfirmed)} account(s) to confirm")
        self.problems = problems
        self.unconfirmed = unconfirmed


@dataclass(frozen=True)
class ImportResult:
    assignments: int
    rows: int
    created_users: list[str]
    existing_accounts: list[str]  # real people's accounts the work was saved under (confirmed)


@dataclass
class _Group:
    """The rows of one (item, annotator): one assignment."""

    item: StudyItem
    username: str
    rows: list[ImportRow]

    @property
    def lines(self) -> str:
        return _lines([r.line for r in self.rows])


def annotations_import(
    study: Study, *, data: bytes, filename: str, actor, confirmed_accounts: Collection[str] = ()
) -> ImportResult:
    """Check the whole file, then save it all or nothing; ImportRejected lists every problem,
    and every existing account of a real person the rows name that is not in
    `confirmed_accounts` (the usernames the researcher confirmed the work is by)."""
    if study.is_locked:
        raise ImportRejected(["the study is locked: it takes no more annotations"])
    try:
        upload = exchange.read_upload(data, filename)
    except UploadError as error:
        raise ImportRejected(error.problems) from None
    checker = _Checker(study)
    groups = checker.groups(upload.rows)
    read = [(line, f"line {line}: {text}") for line, text in upload.problems]
    problems = [text for _, text in sorted(read + checker.problems, key=lambda p: p[0])]
    unconfirmed = [a for a in checker.real_accounts(groups) if a.username not in confirmed_accounts]
    if problems or unconfirmed:
        raise ImportRejected(problems, unconfirmed)
    try:
        with transaction.atomic():
            created = _save(study, groups, checker, actor=actor, filename=filename)
            existing = [a.username for a in checker.real_accounts(groups)]
            result = ImportResult(len(groups), len(upload.rows), created, existing)
            audit_record(
                actor=actor,
                action="annotations.imported",
                target=study,
                after={
                    "file": filename[:200],
                    "annotations": result.assignments,
                    "rows": result.rows,
                    "created_accounts": result.created_users,
                    "existing_accounts": result.existing_accounts,
                },
            )
    except IntegrityError:
        raise ImportRejected(
            [
                "an annotator took a seat on one of these items while the file was saved; "
                "nothing was saved, import the file again"
            ]
        ) from None
    return result


class _Checker:
    """Checks every row against the study in one pass; collects every problem (with the
    line it sorts by) instead of stopping at the first. A cell the file could not be read from
    (its problem is named already) is not checked again."""

    def __init__(self, study: Study):
        self.study = study
        self.problems: list[tuple[int, str]] = []
        self.items = {
            str(i.conversation.public_id): i
            for i in study.items.select_related("conversation", "study")
        }
        self.panels = {t: {v.rubric_id: v for v in panel_versions(study, t)} for t in Track.values}
        self.rubrics = {v.rubric_id: v for v in study.rubric_versions.all()}
        self.users: dict = {}
        self.new_users: dict[str, ImportRow] = {}

    def problem(self, line: int, text: str, *, where: str = "") -> None:
        self.problems.append((line, f"{where or f'line {line}'}: {text}"))

    def groups(self, rows: list[ImportRow]) -> list[_Group]:
        self._load_users({r.annotator for r in rows})
        groups: dict[tuple[str, str], _Group] = {}
        seen: set[tuple[str, str, str]] = set()
        for row in rows:
            if not self._row_ok(row):
                continue
            key = (_uuid(row.conversation), row.annotator)
            if (*key, row.rubric_id) in seen:
                self.problem(
                    row.line,
                    f"a second {row.rubric_id} score by {row.annotator} "
                    f"for conversation {row.conversation}",
                )
                continue
            seen.add((*key, row.rubric_id))
            groups.setdefault(key, _Group(self.items[key[0]], row.annotator, []))
            groups[key].rows.append(row)
        for group in groups.values():
            self._check_group(group)
        self._check_events(list(groups.values()))
        self._check_seats(list(groups.values()))
        return list(groups.values())

    def real_accounts(self, groups: list[_Group]) -> list[NamedAccount]:
        """Existing accounts of real people (made on this site) the groups would be saved
        under, with the lines naming them."""
        lines: dict[str, list[int]] = defaultdict(list)
        for group in groups:
            user = self.users.get(group.username)
            if user is not None and not user.is_imported:
                lines[group.username] += [r.line for r in group.rows]
        return [
            NamedAccount(name, self.users[name].get_full_name(), _lines(numbers))
            for name, numbers in sorted(lines.items())
        ]

    def _load_users(self, usernames: set[str]) -> None:
        User = get_user_model()
        self.users = {u.username: u for u in User.objects.filter(username__in=usernames)}

    def _row_ok(self, row: ImportRow) -> bool:
        """Check the row against the study; whether it can join its annotation's group (it
        names an item of the study, a person and a rubric this site can tell apart)."""
        unread = row.unreadable
        groupable = not unread & {"conversation", "annotator", "track", "rubric_id"}
        if "conversation" not in unread and _uuid(row.conversation) not in self.items:
            self.problem(row.line, f"conversation {row.conversation} is not an item of this study")
            groupable = False
        if not unread & {"track", "rubric_id"}:
            groupable &= self._check_rubric(row)
        if not unread & {"annotator", "track"} and row.track in Track.values:
            groupable &= self._check_person(row)
        return groupable

    def _check_rubric(self, row: ImportRow) -> bool:
        """The track and the rubric (and its version, when given) fit the study."""
        if row.track not in Track.values:
            self.problem(row.line, f"track {row.track!r} is not one of {', '.join(Track.values)}")
            return False
        if row.rubric_id not in self.rubrics:
            self.problem(row.line, f"rubric {row.rubric_id!r} is not a rubric of this study")
            return False
        if row.rubric_id not in self.panels[row.track]:
            self.problem(row.line, f"rubric {row.rubric_id} is not scored by the {row.track} track")
            return False
        used = self.rubrics[row.rubric_id].version
        given = "rubric_version" not in row.unreadable and row.rubric_version
        if given and row.rubric_version != used:
            self.problem(
                row.line,
                f"{row.rubric_id} version {row.rubric_version}, but this study uses version {used}",
            )
        return True

    def _check_person(self, row: ImportRow) -> bool:
        user = self.users.get(row.annotator)
        if user is None:
            try:
                UnicodeUsernameValidator()(row.annotator)
            except ValidationError:
                self.problem(row.line, f"{row.annotator!r} is not a valid username")
                return False
            first = self.new_users.setdefault(row.annotator, row)
            if first.track != row.track:
                self.problem(
                    row.line,
                    f"{row.annotator} is on the {first.track} track at line "
                    f"{first.line}, not {row.track}",
                )
                return False
            licensed = row.licensed is not False
        elif not user.has_role(Role.ANNOTATOR):
            self.problem(row.line, f"{row.annotator} is not an annotator")
            return False
        elif user.track != row.track:
            self.problem(row.line, f"{row.annotator} is on the {user.track} track, not {row.track}")
            return False
        else:
            licensed = user.licensed
        if not licensed and not self.study.is_calibration:
            self.problem(
                row.line,
                f"{row.annotator} is not licensed; a target study takes licensed clinicians only",
            )
        return True

    def _check_group(self, group: _Group) -> None:
        line = group.rows[0].line
        where = f"{group.lines} ({group.username}, conversation {group.rows[0].conversation})"
        for name in (
            "track",
            "overall_comment",
            "submitted_at",
            "seconds_on_task",
            "synthetic",
            "invalidated",
            "invalidated_reason",
            "licensed",
        ):
            readable = [r for r in group.rows if name not in r.unreadable]
            if len({getattr(r, name) for r in readable}) > 1:
                self.problem(line, f"the rows disagree on {name}", where=where)
        panel = self.panels[group.rows[0].track]
        missing = [
            v.name for rid, v in panel.items() if rid not in {r.rubric_id for r in group.rows}
        ]
        if missing:
            self.problem(line, f"no score for {', '.join(missing)}", where=where)
        if Assignment.objects.filter(item=group.item, annotator__username=group.username).exists():
            already = f"{group.username} already has an annotation of this item"
            self.problem(line, already, where=where)

    def _check_events(self, groups: list[_Group]) -> None:
        wanted = {
            (g.item.conversation_id, event) for g in groups for r in g.rows for event in r.event_ids
        }
        if not wanted:
            return
        known = set(
            TraceEvent.objects.filter(
                conversation_id__in={c for c, _ in wanted}, event_id__in={e for _, e in wanted}
            ).values_list("conversation_id", "event_id")
        )
        for group in groups:
            for row in group.rows:
                unknown = [e for e in row.event_ids if (group.item.conversation_id, e) not in known]
                if unknown:
                    self.problem(
                        row.line,
                        f"unknown trace event(s) {', '.join(unknown)} in conversation "
                        f"{row.conversation}",
                    )

    def _check_seats(self, groups: list[_Group]) -> None:
        """Imported work takes seats like served work: an item never passes its overlap."""
        wanted: dict[tuple[int, str], list[_Group]] = defaultdict(list)
        for group in groups:
            if self.takes_seat(group):
                wanted[(group.item.pk, group.rows[0].track)].append(group)
        for (item_id, track), taking in wanted.items():
            free = len(self.free_slots(item_id, track))
            if len(taking) > free:
                first = taking[0].rows[0]
                self.problem(
                    first.line,
                    f"{len(taking)} {track} annotations for {free} free seat(s) "
                    f"(overlap {self.study.overlap_for(track)})",
                    where=f"conversation {first.conversation}",
                )

    def is_licensed(self, group: _Group) -> bool:
        user = self.users.get(group.username)
        if user is not None:
            return user.licensed
        return group.rows[0].licensed is not False

    def takes_seat(self, group: _Group) -> bool:
        return self.is_licensed(group) and not group.rows[0].invalidated

    def free_slots(self, item_id: int, track: str) -> list[int]:
        taken = set(
            Assignment.objects.filter(item_id=item_id, track=track, slot__isnull=False).values_list(
                "slot", flat=True
            )
        )
        return [s for s in range(self.study.overlap_for(track)) if s not in taken]


def _save(study: Study, groups: list[_Group], checker: _Checker, *, actor, filename: str):
    created = _create_users(checker)
    users = checker.users | created
    slots: dict[tuple[int, str], list[int]] = {}
    now = timezone.now()
    for group in groups:
        first, track = group.rows[0], group.rows[0].track
        key = (group.item.pk, track)
        if checker.takes_seat(group) and key not in slots:
            slots[key] = checker.free_slots(*key)
        user = users[group.username]
        assignment = Assignment(
            item=group.item,
            annotator=user,
            track=track,
            slot=slots[key].pop(0) if checker.takes_seat(group) else None,
            practice=not checker.is_licensed(group),
            synthetic=first.synthetic,
            imported=True,
            status=AssignmentStatus.SUBMITTED,
            queue_key=queue_key(user.pk, group.item.pk, study.seed),
            scores={r.rubric_id: r.score for r in group.rows},
            feedback={r.rubric_id: r.feedback for r in group.rows if r.feedback},
            event_links={r.rubric_id: list(r.event_ids) for r in group.rows if r.event_ids},
            overall_comment=first.overall_comment,
            version=1,
            seconds_on_task=first.seconds_on_task,
            saved_at=now,
            submitted_at=_aware(first.submitted_at) or now,
        )
        if first.invalidated:
            assignment.invalidated_at, assignment.invalidated_by = now, actor
            assignment.invalidated_reason = first.invalidated_reason or "invalidated before import"
        assignment.save(force_insert=True)
        whose = "" if user.is_imported else f"; the work of {user.username}, confirmed on import"
        history_add(
            assignment,
            HistoryKind.IMPORT,
            actor=actor,
            new=annotation_snapshot(assignment),
            note=f"imported from {filename[:200]}, {group.lines}{whose}",
        )
    return sorted(created)


def _create_users(checker: _Checker) -> dict:
    User = get_user_model()
    created = {}
    for username, row in sorted(checker.new_users.items()):
        user = User(
            username=username,
            role=Role.ANNOTATOR,
            track=row.track,
            licensed=row.licensed is not False,
            is_active=False,
            origin=AccountOrigin.ANNOTATION_FILE,
        )
        user.set_unusable_password()
        user.save()
        created[username] = user
    return created


def _aware(moment):
    if moment is None or timezone.is_aware(moment):
        return moment
    return moment.replace(tzinfo=UTC)


def _uuid(text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return text


def _lines(numbers: list[int]) -> str:
    return f"line {numbers[0]}" if len(numbers) == 1 else f"lines {_ranges(numbers)}"


def _ranges(numbers: list[int]) -> str:
    """2, 3, 4, 7 -> "2-4, 7"."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
