"""Project membership: the annotators enrolled in a project see its studies, and only they do.

Enrolment is per project (a calibration round and its target studies share their clinicians);
the quota is per study: how many items of each study of the project the annotator is asked to
score (the queue stops serving new items there, annotation.services.queue). Withdrawing
someone hides the project's studies from them and gives back the seats of their reservations;
their submitted work stays and counts. Every change is audited.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import AccountOrigin, NotificationKind, Role, User
from annotation.models import (
    Assignment,
    AssignmentStatus,
    Project,
    ProjectMember,
    Study,
    StudyStatus,
)
from annotation.services.moves import reservation_release
from annotation.services.outbox import notify
from audit.services import audit_record

log = logging.getLogger(__name__)
QUOTA_LIMIT = 10_000


def enrolable_people() -> QuerySet[User]:
    """Accounts that can be enrolled: active annotators of this site."""
    return User.objects.filter(
        role=Role.ANNOTATOR, is_active=True, origin=AccountOrigin.SITE
    ).order_by("track", "username")


@transaction.atomic
def member_enrol(*, project: Project, annotator, quota: int | None = None, actor) -> ProjectMember:
    """Enrol the annotator (again, if they were withdrawn) and tell them."""
    _check_person(annotator)
    _check_quota(quota)
    member = (
        ProjectMember.objects.select_for_update()
        .filter(project=project, annotator=annotator)
        .first()
    )
    if member is not None and member.is_active:
        raise ValidationError(f"{annotator.username} is already enrolled in {project.name}.")
    now = timezone.now()
    member = member or ProjectMember(project=project, annotator=annotator)
    member.quota, member.enrolled_at, member.enrolled_by = quota, now, actor
    member.withdrawn_at = None
    member.save()
    event = audit_record(
        actor=actor,
        action="project.member_enrolled",
        target=member,
        after={"project": project.pk, "annotator": annotator.username, "quota": quota},
    )
    notify(
        kind=NotificationKind.ENROLLED,
        recipients=[annotator],
        key=f"audit:{event.pk}",
        context={"project": project.pk},
    )
    return member


def claimed_projects_enrol(sender, *, person, projects, **kwargs) -> list[ProjectMember]:
    """Enrol a person who signed on in the projects their identity provider's claim names
    (accounts.signals.projects_claimed): those that exist and where they are not enrolled yet.
    Only annotators enrol; a name no project has is logged and skipped. Nobody is withdrawn:
    a claim that stops naming a project leaves that to the project page."""
    if not person.has_role(Role.ANNOTATOR):
        return []
    known = Project.objects.filter(name__in=projects)
    missing = set(projects) - set(known.values_list("name", flat=True))
    if missing:
        log.warning("sign-on names projects this site does not have: %s", sorted(missing))
    active = ProjectMember.objects.active().filter(annotator=person).values("project")
    return [
        member_enrol(project=project, annotator=person, actor=None)
        for project in known.exclude(pk__in=active)
    ]


def _check_person(person) -> None:
    if not person.has_role(Role.ANNOTATOR):
        raise ValidationError(f"{person.username} is not an annotator; only annotators enrol.")
    if not person.is_active or person.is_imported:
        raise ValidationError(
            f"{person.username} is an inactive or imported account; it cannot take work."
        )


def _check_quota(quota: int | None) -> None:
    if quota is not None and not 1 <= quota <= QUOTA_LIMIT:
        raise ValidationError({"quota": "A quota is at least 1 item per study (blank: no limit)."})


@transaction.atomic
def member_quota_set(member: ProjectMember, *, quota: int | None, actor) -> ProjectMember:
    _check_quota(quota)
    before = member.quota
    member.quota = quota
    member.save(update_fields=["quota"])
    audit_record(
        actor=actor,
        action="project.member_quota_set",
        target=member,
        before={"quota": before},
        after={"quota": quota},
    )
    return member


@transaction.atomic
def member_withdraw(member: ProjectMember, *, actor) -> int:
    """Withdraw the annotator: the project's studies disappear from their pages and their
    reservations are released (their submitted work stays). Returns how many were released."""
    if not member.is_active:
        raise ValidationError(f"{member.annotator.username} is not enrolled any more.")
    member.withdrawn_at = timezone.now()
    member.save(update_fields=["withdrawn_at"])
    held = Assignment.objects.filter(
        annotator_id=member.annotator_id,
        item__study__project_id=member.project_id,
        item__study__status=StudyStatus.OPEN,
        status=AssignmentStatus.RESERVED,
    )
    released = 0
    for assignment in held:
        reservation_release(assignment, actor=actor, note="annotator withdrawn from the project")
        released += 1
    audit_record(
        actor=actor,
        action="project.member_withdrawn",
        target=member,
        before={"enrolled": True},
        after={"enrolled": False, "released": released},
    )
    return released


def project_members(project: Project) -> dict[str, list[ProjectMember]]:
    """Enrolled and withdrawn members, by track then username."""
    members = project.members.select_related("annotator", "enrolled_by").order_by(
        "annotator__track", "annotator__username"
    )
    return {
        "enrolled": [m for m in members if m.is_active],
        "withdrawn": [m for m in members if not m.is_active],
    }


def receivers(study: Study, *, track: str, besides=None) -> QuerySet[User]:
    """Who may receive work of `track` in the study: licensed, active annotators of that track
    enrolled in its project (besides the one giving it)."""
    members = ProjectMember.objects.active().filter(project_id=study.project_id)
    people = User.objects.filter(
        pk__in=members.values("annotator_id"), track=track, licensed=True, is_active=True
    )
    if besides is not None:
        people = people.exclude(pk=besides.pk)
    return people.order_by("username")
