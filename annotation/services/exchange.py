"""Export a study's annotations as CSV / JSONL, and import annotations scored elsewhere.

Export: one row per submitted assignment x scored rubric (format: annotation.engine.exchange),
with the rubric version, the trace events the feedback points at, and the practice, synthetic
and invalidated marks; `pseudonymise` replaces usernames with A01, A02, ...

Import (a study scored on paper or in a spreadsheet): rows name items by the conversation's
public id and people by username. The whole file is checked first and every problem is named
with its line; only a clean file is saved, in one transaction. Unknown people are created as
inactive annotators with an unusable password (the track from the row; licensed from the row,
else licensed). Each imported assignment is submitted, takes a seat in the item's overlap like
one served by the queue, and gets an IMPORT history entry. Practice is derived as the queue
derives it: an unlicensed annotator's work in a calibration round is practice.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Role, Track
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
from annotation.services.queue import _queue_key
from annotation.services.studies import panel_versions
from benchmark.models import TraceEvent

FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


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


def export_text(study: Study, fmt: str, *, pseudonymise: bool = False) -> str:
    rows = export_rows(study, pseudonymise=pseudonymise)
    return exchange.write_csv(rows) if fmt == "csv" else exchange.to_jsonl(rows)


# --- import ------------------------------------------------------------------------------------


class ImportRejected(Exception):
    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


@dataclass(frozen=True)
class ImportResult:
    assignments: int
    rows: int
    created_users: list[str]


@dataclass
class _Group:
    """The rows of one (item, annotator): one assignment."""

    item: StudyItem
    username: str
    rows: list[ImportRow]

    @property
    def lines(self) -> str:
        numbers = [r.line for r in self.rows]
        return f"line {numbers[0]}" if len(numbers) == 1 else f"lines {_ranges(numbers)}"


def annotations_import(study: Study, *, data: bytes, filename: str, actor) -> ImportResult:
    """Check the whole file, then save it all or nothing; ImportRejected lists every problem."""
    if study.is_locked:
        raise ImportRejected(["the study is locked: it takes no more annotations"])
    try:
        rows = exchange.read_upload(data, filename)
    except UploadError as error:
        raise ImportRejected(error.problems) from None
    checker = _Checker(study)
    groups = checker.groups(rows)
    if checker.problems:
        raise ImportRejected(checker.problems)
    try:
        with transaction.atomic():
            created = _save(study, groups, checker, actor=actor, filename=filename)
    except IntegrityError:
        raise ImportRejected(
            ["an annotator took a seat on one of these items while the file was saved; "
             "nothing was saved, import the file again"]
        ) from None  # fmt: skip
    return ImportResult(len(groups), len(rows), created)


class _Checker:
    """Checks rows against the study; collects problems instead of stopping at the first."""

    def __init__(self, study: Study):
        self.study = study
        self.problems: list[str] = []
        self.items = {
            str(i.conversation.public_id): i
            for i in study.items.select_related("conversation", "study")
        }
        self.panels = {t: {v.rubric_id: v for v in panel_versions(study, t)} for t in Track.values}
        self.rubrics = {v.rubric_id: v for v in study.rubric_versions.all()}
        self.users: dict = {}
        self.new_users: dict[str, ImportRow] = {}

    def problem(self, where: str, text: str) -> None:
        self.problems.append(f"{where}: {text}")

    def groups(self, rows: list[ImportRow]) -> list[_Group]:
        self._load_users({r.annotator for r in rows})
        groups: dict[tuple[str, str], _Group] = {}
        seen: set[tuple[str, str, str]] = set()
        for row in rows:
            if not self._row_ok(row):
                continue
            key = (_uuid(row.conversation), row.annotator)
            if (*key, row.rubric_id) in seen:
                self.problem(f"line {row.line}", f"a second {row.rubric_id} score by "
                             f"{row.annotator} for conversation {row.conversation}")  # fmt: skip
                continue
            seen.add((*key, row.rubric_id))
            groups.setdefault(key, _Group(self.items[key[0]], row.annotator, []))
            groups[key].rows.append(row)
        checked = [g for g in groups.values() if self._group_ok(g)]
        self._check_events(checked)
        self._check_seats(checked)
        return checked

    def _load_users(self, usernames: set[str]) -> None:
        User = get_user_model()
        self.users = {u.username: u for u in User.objects.filter(username__in=usernames)}

    def _row_ok(self, row: ImportRow) -> bool:
        where, before = f"line {row.line}", len(self.problems)
        if _uuid(row.conversation) not in self.items:
            self.problem(where, f"conversation {row.conversation} is not an item of this study")
        if row.track not in Track.values:
            self.problem(where, f"track {row.track!r} is not one of {', '.join(Track.values)}")
        elif row.rubric_id not in self.rubrics:
            self.problem(where, f"rubric {row.rubric_id!r} is not a rubric of this study")
        elif row.rubric_id not in self.panels[row.track]:
            self.problem(where, f"rubric {row.rubric_id} is not scored by the {row.track} track")
        elif row.rubric_version and row.rubric_version != self.rubrics[row.rubric_id].version:
            self.problem(
                where, f"{row.rubric_id} version {row.rubric_version}, but this study uses "
                f"version {self.rubrics[row.rubric_id].version}",
            )  # fmt: skip
        self._check_person(row, where)
        return len(self.problems) == before

    def _check_person(self, row: ImportRow, where: str) -> None:
        user = self.users.get(row.annotator)
        if user is None:
            try:
                UnicodeUsernameValidator()(row.annotator)
            except ValidationError:
                self.problem(where, f"{row.annotator!r} is not a valid username")
                return
            first = self.new_users.setdefault(row.annotator, row)
            if first.track != row.track:
                self.problem(where, f"{row.annotator} is on the {first.track} track at line "
                             f"{first.line}, not {row.track}")  # fmt: skip
                return
            licensed = row.licensed is not False
        elif not user.has_role(Role.ANNOTATOR):
            self.problem(where, f"{row.annotator} is not an annotator")
            return
        elif user.track != row.track:
            self.problem(where, f"{row.annotator} is on the {user.track} track, not {row.track}")
            return
        else:
            licensed = user.licensed
        if not licensed and not self.study.is_calibration:
            self.problem(
                where, f"{row.annotator} is not licensed; a target study takes licensed "
                "clinicians only",
            )  # fmt: skip

    def _group_ok(self, group: _Group) -> bool:
        before = len(self.problems)
        where = f"{group.lines} ({group.username}, conversation {group.rows[0].conversation})"
        for name in ("track", "overall_comment", "submitted_at", "seconds_on_task", "synthetic",
                     "invalidated", "invalidated_reason", "licensed"):  # fmt: skip
            if len({getattr(r, name) for r in group.rows}) > 1:
                self.problem(where, f"the rows disagree on {name}")
        panel = self.panels[group.rows[0].track]
        missing = [
            v.name for rid, v in panel.items() if rid not in {r.rubric_id for r in group.rows}
        ]
        if missing:
            self.problem(where, f"no score for {', '.join(missing)}")
        if Assignment.objects.filter(item=group.item, annotator__username=group.username).exists():
            self.problem(where, f"{group.username} already has an annotation of this item")
        return len(self.problems) == before

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
                        f"line {row.line}",
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
                self.problem(
                    f"conversation {taking[0].rows[0].conversation}",
                    f"{len(taking)} {track} annotations for {free} free seat(s) "
                    f"(overlap {self.study.overlap_for(track)})",
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
            status=AssignmentStatus.SUBMITTED,
            queue_key=_queue_key(user.pk, group.item.pk, study.seed),
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
        history_add(
            assignment, HistoryKind.IMPORT, actor=actor, new=annotation_snapshot(assignment),
            note=f"imported from {filename[:200]}, {group.lines}",
        )  # fmt: skip
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


def _ranges(numbers: list[int]) -> str:
    """2, 3, 4, 7 -> "2-4, 7"."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
