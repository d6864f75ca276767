"""Adjudication: a senior clinician settles a major disagreement with a score and a reason.

A researcher sends an (item, rubric) that qualifies (annotation.engine.adjudication) to the
adjudication queue. Senior clinicians (`User.senior`) enrolled in the project and on the
rubric's track (any track for the realism rubrics) see it; one who has the item does not. The
first senior to open an adjudication holds it, and from then on the queue never serves them the
item (annotation.services.queue): they have seen its scores. The adjudication page shows the
conversation blinded like the review screen, every counted clinician's score and feedback (as
Clinician 1, 2, ...), and the jury's mean only when the researcher allowed it for the study;
never a model. The adjudicated score serves as the clinician value in the alignment report's
"jury vs adjudicated".
"""

from __future__ import annotations

from collections import defaultdict

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import NotificationKind, Role, User
from annotation.engine.adjudication import Gap, adjudication_gaps
from annotation.models import (
    Adjudication,
    AdjudicationReason,
    Assignment,
    AssignmentStatus,
    ProjectMember,
    Study,
    StudyItem,
)
from annotation.services.outbox import notify
from annotation.services.review import (
    SCENARIO_FIELDS,
    panel_rubrics,
    study_redactor,
    trace_events,
)
from annotation.services.round_report import jury_means
from audit.services import audit_record
from jury.models import RubricVersion

RATIONALE_LIMIT = 5000


def study_ratings(study: Study) -> dict[tuple[int, str], list[dict]]:
    """(item id, rubric id) -> the counted clinician ratings: submitted, valid, not practice.
    The demo's scripted clinicians count here (marked synthetic): they are the demo's data."""
    ratings: dict[tuple[int, str], list[dict]] = defaultdict(list)
    assignments = Assignment.objects.filter(
        item__study=study,
        status=AssignmentStatus.SUBMITTED,
        invalidated_at__isnull=True,
        practice=False,
    ).order_by("submitted_at", "pk")
    for a in assignments:
        for rubric, score in a.scores.items():
            if score is not None:
                ratings[(a.item_id, rubric)].append({"score": int(score), "assignment": a})
    return ratings


def study_gaps(study: Study, ratings=None) -> list[Gap]:
    ratings = ratings if ratings is not None else study_ratings(study)
    scores = {key: [r["score"] for r in rows] for key, rows in ratings.items()}
    return adjudication_gaps(scores, jury_means(study), after_study=study.is_locked)


def adjudication_candidates(study: Study) -> list[dict]:
    """Qualifying pairs with their item and, once sent, their adjudication."""
    sent = {(a.item_id, a.rubric_id): a for a in study_adjudications(study)}
    gaps = study_gaps(study)
    items = StudyItem.objects.in_bulk({g.item for g in gaps})
    return [
        {"gap": g, "item": items[g.item], "adjudication": sent.get((g.item, g.rubric))}
        for g in gaps
    ]


def study_adjudications(study: Study) -> QuerySet[Adjudication]:
    return Adjudication.objects.filter(item__study=study).select_related(
        "item__conversation", "adjudicator", "sent_by"
    )


@transaction.atomic
def adjudication_send(*, study: Study, item: StudyItem, rubric_id: str, actor) -> Adjudication:
    """Send a qualifying (item, rubric) to the adjudication queue (once)."""
    if item.study_id != study.pk:
        raise ValidationError("That item is not in this study.")
    gap = next((g for g in study_gaps(study) if (g.item, g.rubric) == (item.pk, rubric_id)), None)
    if gap is None:
        raise ValidationError(
            "This item does not qualify: its clinicians are within 1 point of each other"
            + (
                " and of the jury."
                if study.is_locked
                else " (the jury is compared once the study is locked)."
            )
        )
    try:
        with transaction.atomic():
            adjudication = Adjudication.objects.create(
                item=item, rubric_id=rubric_id, reason=gap.reason, gap=gap.gap, sent_by=actor
            )
    except IntegrityError:
        raise ValidationError("This item and rubric are already in adjudication.") from None
    audit_record(
        actor=actor,
        action="adjudication.sent",
        target=adjudication,
        after={"item": item.pk, "rubric": rubric_id, "reason": gap.reason, "gap": gap.gap},
    )
    # Once per item (not per rubric): a senior opening the queue sees all of the item's.
    notify(
        kind=NotificationKind.ADJUDICATION_WAITING,
        recipients=_seniors_for(adjudication),
        key=f"adjudication-item:{item.pk}",
        context={"adjudication": adjudication.pk},
    )
    return adjudication


def _seniors_for(adjudication: Adjudication) -> list:
    """The senior clinicians who may take this adjudication up: enrolled in its project, of its
    rubric's track, without the item of their own."""
    members = ProjectMember.objects.active().filter(project_id=adjudication.item.study.project_id)
    seniors = User.objects.filter(
        pk__in=members.values("annotator_id"), senior=True, is_active=True
    ).order_by("pk")
    return [person for person in seniors if not adjudication_refusal(adjudication, person)]


@transaction.atomic
def study_jury_for_adjudication_set(study: Study, *, shown: bool, actor) -> Study:
    before = study.adjudication_shows_jury
    study.adjudication_shows_jury = shown
    study.save(update_fields=["adjudication_shows_jury"])
    audit_record(
        actor=actor,
        action="study.adjudication_jury_set",
        target=study,
        before={"shows_jury": before},
        after={"shows_jury": shown},
    )
    return study


# --- the senior clinician's side -----------------------------------------------------------------


def senior_refusal(user) -> str:
    """Why `user` may not adjudicate at all, or ""."""
    if not user.has_role(Role.ANNOTATOR) or not user.senior:
        return "Only senior clinicians adjudicate; an admin marks an account as senior."
    if not user.licensed:
        return "Only licensed clinicians adjudicate."
    return ""


def adjudication_refusal(adjudication: Adjudication, user) -> str:
    """Why `user` may not adjudicate this one, or ""."""
    refusal = senior_refusal(user)
    if refusal:
        return refusal
    track = _rubric_track(adjudication)
    if track and track != user.track:
        return f"This rubric is scored on the {track} track; a senior clinician of it decides."
    if Assignment.objects.filter(item_id=adjudication.item_id, annotator=user).exists():
        return "You have this item yourself; another senior clinician adjudicates it."
    if adjudication.adjudicator_id not in (None, user.pk):
        return "Another senior clinician took this one up."
    return ""


def adjudication_take_up(adjudication: Adjudication, user) -> Adjudication:
    """The first senior clinician to open an adjudication holds it: from then on the queue
    never serves them the item (they have seen its scores), and nobody else adjudicates it."""
    refusal = adjudication_refusal(adjudication, user)
    if refusal:
        raise PermissionDenied(refusal)
    Adjudication.objects.filter(pk=adjudication.pk, adjudicator__isnull=True).update(
        adjudicator=user
    )
    adjudication.refresh_from_db()
    if adjudication.adjudicator_id != user.pk:  # another senior opened it a moment earlier
        raise PermissionDenied("Another senior clinician took this one up.")
    return adjudication


def _rubric_track(adjudication: Adjudication) -> str:
    """The rubric's track, "" for a realism rubric (every clinician scores those)."""
    version = adjudication.item.study.rubric_versions.filter(
        rubric_id=adjudication.rubric_id
    ).first()
    return version.track if version is not None and version.kind == "dimension" else ""


def adjudication_queue(user) -> list[Adjudication]:
    """The adjudications `user` may take up: of projects they are enrolled in, waiting or
    adjudicated by them, on rubrics of their track."""
    projects = ProjectMember.objects.active().filter(annotator=user).values("project_id")
    found = (
        Adjudication.objects.filter(item__study__project_id__in=projects)
        .filter(Q(adjudicated_at__isnull=True) | Q(adjudicator=user))
        .exclude(item__assignments__annotator=user)
        .select_related("item__study__project", "item__conversation__entry")
        .order_by("adjudicated_at", "sent_at", "pk")
    )
    mine = [a for a in found if not adjudication_refusal(a, user)]
    names = dict(
        RubricVersion.objects.filter(rubric_id__in={a.rubric_id for a in mine})
        .order_by("version")
        .values_list("rubric_id", "name")
    )
    for adjudication in mine:
        adjudication.rubric_name = names.get(adjudication.rubric_id, adjudication.rubric_id)
    return mine


def adjudication_for(user, public_id) -> Adjudication | None:
    """The adjudication as `user` may reach it: in a project they are enrolled in."""
    projects = ProjectMember.objects.active().filter(annotator=user).values("project_id")
    return (
        Adjudication.objects.filter(public_id=public_id, item__study__project_id__in=projects)
        .select_related("item__study__project", "item__conversation__entry", "adjudicator")
        .first()
    )


def adjudication_context(adjudication: Adjudication, user) -> dict:
    """What the adjudication page shows, blinded: the case, the rubric, every counted
    clinician's score and feedback, the jury's mean only where the study allows it."""
    item = adjudication.item
    study = item.study
    redact = study_redactor(study)
    entry = item.conversation.entry
    rubric = next(
        (p for p in panel_rubrics(study, user.track) if p.rubric_id == adjudication.rubric_id),
        None,
    )
    ratings = study_ratings(study).get((item.pk, adjudication.rubric_id), [])
    jury = jury_means(study).get((item.pk, adjudication.rubric_id))
    return {
        "adjudication": adjudication,
        "reason": _reason_shown(adjudication, study),
        "study": study,
        "rubric": rubric,
        "profile": redact.json(entry.profile or {}),
        "story": redact.text(entry.story),
        "scenario": [(label, getattr(entry, name)) for label, name in SCENARIO_FIELDS],
        "events": trace_events(item.conversation_id, redact),
        "clinicians": [
            {
                "label": f"Clinician {number}",
                "score": r["score"],
                "feedback": redact.text(r["assignment"].feedback.get(adjudication.rubric_id, "")),
                "overall": redact.text(r["assignment"].overall_comment),
                "events": r["assignment"].event_links.get(adjudication.rubric_id, []),
                "synthetic": r["assignment"].synthetic,
                "imported": r["assignment"].imported,
            }
            for number, r in enumerate(ratings, start=1)
        ],
        "jury": jury if study.adjudication_shows_jury else None,
        "shows_jury": study.adjudication_shows_jury,
    }


def _reason_shown(adjudication: Adjudication, study: Study) -> str:
    """Why the item is here, as a clinician may read it: nothing about the jury unless the
    researcher shows the jury for this study."""
    if adjudication.reason == AdjudicationReason.JURY and not study.adjudication_shows_jury:
        return "A researcher asks for a senior clinician's score on this rubric"
    return adjudication.get_reason_display()


@transaction.atomic
def adjudication_record(
    adjudication: Adjudication, *, adjudicator, score: int, rationale: str
) -> Adjudication:
    """Store the senior clinician's score and reason (they may revise their own)."""
    locked = (
        Adjudication.objects.select_for_update()
        .select_related("item__study")
        .get(pk=adjudication.pk)
    )
    refusal = adjudication_refusal(locked, adjudicator)
    if refusal:
        raise PermissionDenied(refusal)
    rationale = rationale.strip()
    errors = {}
    if not isinstance(score, int) or not 1 <= score <= 5:
        errors["score"] = "The adjudicated score is a whole number from 1 to 5."
    if not rationale:
        errors["rationale"] = "Give the reason for the adjudicated score."
    elif len(rationale) > RATIONALE_LIMIT:
        errors["rationale"] = f"The reason is longer than {RATIONALE_LIMIT} characters."
    if errors:
        raise ValidationError(errors)
    before = {"score": locked.score, "rationale": locked.rationale}
    locked.adjudicator, locked.score, locked.rationale = adjudicator, score, rationale
    locked.adjudicated_at = timezone.now()
    locked.save(update_fields=["adjudicator", "score", "rationale", "adjudicated_at"])
    audit_record(
        actor=adjudicator,
        action="adjudication.recorded",
        target=locked,
        before=before,
        after={"score": score, "rationale": rationale},
    )
    return locked
