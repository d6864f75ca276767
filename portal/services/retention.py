"""Retention: what a project keeps past its retention period, and forgetting one person.

A locked study whose project's `retention_days` have passed since it was locked is due. The
purge removes from it what identifies or was written by people: the conversations' text
(masked character for character; a conversation another study still needs keeps it), the
clinicians' free text (feedback, overall comments, skip reasons, adjudication rationales, the
same in the history snapshots) and the personal data of annotators who take part in no study
still kept. Scores, judge scores, counts and every figure stay: a `StudyPurge` row keeps the
counts, the SHA-256 of the removed text and of each report table just before, and the export
taken first. A purge refuses a study no one exported (a study archive or the annotations
file) unless forced.

Forgetting a person (on their request) keeps their annotations as pseudonymous rows: the
account keeps its id, so every score and figure stays, but loses its name, e-mail, password
and tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Role
from annotation.models import (
    Adjudication,
    Assignment,
    AssignmentHistory,
    ProjectMember,
    Study,
    StudyItem,
    StudyPurge,
    StudyStatus,
)
from audit.models import AuditEvent
from audit.services import audit_record
from benchmark.models import TraceEvent

User = get_user_model()

# The audit actions that show a study's data left the site in full before a purge.
EXPORT_ACTIONS = ("download.archive", "download.annotations", "study.archive_exported")
# Free text in assignments and in their history snapshots.
FREE_TEXT_FIELDS = ("feedback", "overall_comment", "skip_reason")
FORGOTTEN_PREFIX = "forgotten-"
# What a purged conversation's text is replaced with, character for character.
MASK = "\u2591"

Progress = Callable[[str], None]


class RetentionError(Exception):
    """A purge that cannot go ahead; the message says why and what to do."""


@dataclass
class StudyPlan:
    """What purging one study removes (the dry run lists these)."""

    study: Study
    due_since: object  # the datetime its retention ended
    export: dict  # the export taken before, or {} when there is none
    conversations: list[int] = field(default_factory=list)
    events_with_text: int = 0
    assignments_with_text: int = 0
    adjudications_with_text: int = 0
    people: list = field(default_factory=list)  # annotators whose personal data goes

    @property
    def counts(self) -> dict[str, int]:
        return {
            "conversations": len(self.conversations),
            "events_with_text": self.events_with_text,
            "assignments_with_text": self.assignments_with_text,
            "adjudications_with_text": self.adjudications_with_text,
            "people": len(self.people),
        }


def studies_due(now=None) -> list[Study]:
    """Locked, not yet purged studies whose project's retention period has ended."""
    now = now or timezone.now()
    candidates = Study.objects.filter(
        status=StudyStatus.LOCKED,
        purged_at__isnull=True,
        locked_at__isnull=False,
        project__retention_days__isnull=False,
    ).select_related("project")
    return [
        study
        for study in candidates
        if study.locked_at + timedelta(days=study.project.retention_days) <= now
    ]


def purge_plan(now=None) -> list[StudyPlan]:
    """The dry run: each due study and what purging it would remove. Nothing is written."""
    due = studies_due(now)
    leaving = {study.pk for study in due}
    return [_study_plan(study, leaving) for study in due]


def purge_run(
    plans: list[StudyPlan], *, actor, force_without_export: bool = False, progress: Progress = print
) -> list[StudyPurge]:
    """Purge the planned studies, each in its own transaction, recorded in the audit trail."""
    missing = [plan.study.name for plan in plans if not plan.export]
    if missing and not force_without_export:
        raise RetentionError(
            f"No export of {', '.join(missing)} was ever taken; download its study archive or "
            "its annotations first (or purge with --force-without-export)."
        )
    done = []
    for number, plan in enumerate(plans, start=1):
        progress(f"Purging {plan.study.name} ({number} of {len(plans)})...")
        done.append(_study_purge(plan, actor=actor, forced=not plan.export))
    return done


def _study_plan(study: Study, leaving: set[int]) -> StudyPlan:
    due_since = study.locked_at + timedelta(days=study.project.retention_days)
    plan = StudyPlan(study=study, due_since=due_since, export=_export_taken(study))
    kept_studies = Study.objects.exclude(pk__in=leaving).exclude(purged_at__isnull=False)
    shared = StudyItem.objects.filter(study__in=kept_studies).values("conversation_id")
    plan.conversations = list(
        study.items.exclude(conversation_id__in=shared).values_list("conversation_id", flat=True)
    )
    plan.events_with_text = (
        TraceEvent.objects.filter(conversation_id__in=plan.conversations)
        .exclude(content="", arguments__isnull=True)
        .count()
    )
    plan.assignments_with_text = _study_assignments(study).filter(_has_free_text()).count()
    plan.adjudications_with_text = (
        Adjudication.objects.filter(item__study=study).exclude(rationale="").count()
    )
    plan.people = _people_leaving(study, kept_studies)
    return plan


def _export_taken(study: Study) -> dict:
    event = (
        AuditEvent.objects.filter(
            action__in=EXPORT_ACTIONS, object_type=Study._meta.label, object_id=str(study.pk)
        )
        .order_by("-pk")
        .first()
    )
    if event is None:
        return {}
    return {
        "audit_event": event.pk,
        "action": event.action,
        "at": event.at.isoformat(),
        "hash": event.hash,
    }


def _study_assignments(study: Study):
    return Assignment.objects.filter(item__study=study)


def _has_free_text() -> Q:
    return ~Q(feedback={}) | ~Q(overall_comment="") | ~Q(skip_reason="")


def _people_leaving(study: Study, kept_studies) -> list:
    """Annotators of the study who score in, or are enrolled for, no study still kept."""
    worked = set(_study_assignments(study).values_list("annotator_id", flat=True))
    enrolled = set(study.project.members.values_list("annotator_id", flat=True))
    still_needed = set(
        Assignment.objects.filter(item__study__in=kept_studies).values_list(
            "annotator_id", flat=True
        )
    ) | set(
        ProjectMember.objects.active()
        .filter(project__studies__in=kept_studies)
        .values_list("annotator_id", flat=True)
    )
    return list(
        User.objects.filter(pk__in=(worked | enrolled) - still_needed, role=Role.ANNOTATOR)
        .exclude(username__startswith=FORGOTTEN_PREFIX)
        .order_by("pk")
    )


@transaction.atomic
def _study_purge(plan: StudyPlan, *, actor, forced: bool) -> StudyPurge:
    study = Study.objects.select_for_update().get(pk=plan.study.pk)
    if study.purged_at is not None:
        raise RetentionError(f"{study.name} was purged already.")
    # Imported here: the tables draw on pandas and the statistics, and the admin site imports
    # this module in every process at start-up.
    from alignment.services.archive.export import study_tables

    tables = {name: _sha256(text) for name, text in study_tables(study).items()}
    removed = hashlib.sha256()
    _conversation_text_remove(plan.conversations, removed)
    _free_text_remove(study, removed)
    for person in plan.people:
        person_anonymise(person, actor=actor, reason=f"retention of {study.project.name} ended")
    study.purged_at = timezone.now()
    study.save(update_fields=["purged_at"])
    record = StudyPurge.objects.create(
        study=study,
        by=actor if getattr(actor, "is_authenticated", False) else None,
        counts=plan.counts,
        removed_sha256=removed.hexdigest(),
        table_sha256=tables,
        export=plan.export,
        forced_without_export=forced,
    )
    audit_record(
        actor=actor,
        action="study.purged",
        target=study,
        after={
            "counts": plan.counts,
            "removed_sha256": record.removed_sha256,
            "forced_without_export": forced,
        },
    )
    return record


def _conversation_text_remove(conversation_ids: list[int], removed) -> None:
    """Each event's text becomes a mask of the same length and its tool arguments go: the
    judge-bias figures measure conversations by their length in characters, so the mask keeps
    that one property of the text and nothing else."""
    events = TraceEvent.objects.filter(conversation_id__in=conversation_ids).order_by("pk")
    masked = []
    for event in events.only("pk", "content", "arguments").iterator(chunk_size=1000):
        removed.update(_canonical([event.content, event.arguments]))
        event.content, event.arguments = MASK * len(event.content), None
        masked.append(event)
    TraceEvent.objects.bulk_update(masked, ["content", "arguments"], batch_size=500)


def _free_text_remove(study: Study, removed) -> None:
    assignments = _study_assignments(study).filter(_has_free_text()).order_by("pk")
    for row in assignments.values(*FREE_TEXT_FIELDS).iterator():
        removed.update(_canonical(row))
    assignments.update(feedback={}, overall_comment="", skip_reason="")
    history = AssignmentHistory.objects.filter(assignment__item__study=study).order_by("pk")
    for entry in history.iterator():
        old, new = _without_free_text(entry.old), _without_free_text(entry.new)
        if (old, new) != (entry.old, entry.new):
            removed.update(_canonical([entry.old, entry.new]))
            AssignmentHistory.objects.filter(pk=entry.pk).update(old=old, new=new)
    adjudications = Adjudication.objects.filter(item__study=study).exclude(rationale="")
    for rationale in adjudications.order_by("pk").values_list("rationale", flat=True):
        removed.update(_canonical(rationale))
    adjudications.update(rationale="")


def _without_free_text(snapshot: dict) -> dict:
    return {key: value for key, value in snapshot.items() if key not in FREE_TEXT_FIELDS}


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- one person ------------------------------------------------------------------------------


def person_anonymise(person, *, actor, reason: str) -> None:
    """Remove what names `person` and keep their work as a pseudonymous row: the account keeps
    its id (so every annotation, history entry and figure stays) and becomes an inactive
    account named `forgotten-<id>` with no name, e-mail, password or tokens. Usernames copied
    into reassignment history become the pseudonym too. The audit trail is not rewritten: its
    records are chained, and they name the account by id."""
    pseudonym = f"{FORGOTTEN_PREFIX}{person.pk}"
    with transaction.atomic():
        former = person.username
        person.username, person.first_name, person.last_name, person.email = pseudonym, "", "", ""
        person.is_active = False
        person.set_unusable_password()
        person.save()
        person.api_tokens.all().delete()
        ProjectMember.objects.active().filter(annotator=person).update(withdrawn_at=timezone.now())
        _history_names_replace(person.pk, pseudonym)
        audit_record(
            actor=actor,
            action="person.anonymised",
            target=person,
            note=reason,
            after={"had_username": bool(former)},
        )


def _history_names_replace(person_id: int, pseudonym: str) -> None:
    named = AssignmentHistory.objects.filter(
        Q(old__annotator_id=person_id) | Q(new__annotator_id=person_id)
    )
    for entry in named:
        for snapshot in (entry.old, entry.new):
            if snapshot.get("annotator_id") == person_id:
                snapshot["annotator"] = pseudonym
        entry.save(update_fields=["old", "new"])


def person_forget(person, *, actor) -> None:
    """A person's request to be forgotten. Staff accounts are refused: their names sit on
    studies and decisions the site must still be able to account for."""
    if person.username.startswith(FORGOTTEN_PREFIX):
        raise RetentionError(f"{person.username} was forgotten already.")
    if person.role != Role.ANNOTATOR:
        raise RetentionError(
            f"{person.username} is a {person.get_role_display().lower()}; only annotators' "
            "accounts are forgotten this way (deactivate staff accounts instead)."
        )
    person_anonymise(person, actor=actor, reason="the person asked to be forgotten")
