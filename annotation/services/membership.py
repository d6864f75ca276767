"""Who belongs to a project: the read-only questions the queue, the worklist and the moves
ask. Enrolling and withdrawing people (annotation.services.enrolment) writes what these read;
it sits above the moves it calls (a withdrawal releases reservations), these sit below them.
"""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import ProjectMember, Study


def is_enrolled(study: Study, annotator) -> bool:
    return (
        ProjectMember.objects.active()
        .filter(project_id=study.project_id, annotator_id=annotator.pk)
        .exists()
    )


def visible_studies(annotator) -> QuerySet[Study]:
    """The studies an annotator may see: those of the projects they are enrolled in."""
    projects = ProjectMember.objects.active().filter(annotator_id=annotator.pk)
    return Study.objects.filter(project_id__in=projects.values("project_id"))


def quota_of(study: Study, annotator) -> int | None:
    """The annotator's quota of items in this study (None: no limit)."""
    return (
        ProjectMember.objects.active()
        .filter(project_id=study.project_id, annotator_id=annotator.pk)
        .values_list("quota", flat=True)
        .first()
    )
