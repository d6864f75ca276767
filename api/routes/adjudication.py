"""A study's adjudication as JSON, the researcher's side of it (the study's Adjudication
page): the major disagreements that qualify and where each stands, the adjudications sent
and their outcome, sending an (item, rubric) to the senior clinicians, and whether they see
the jury's mean. Senior clinicians adjudicate on their own pages: they are annotators, whom
the API refuses, so nothing here reaches a clinician, and what a clinician sees stays blinded
by those pages' rules."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db.models import prefetch_related_objects
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import Field

from annotation.forms import studyops as forms
from annotation.models import Adjudication, AdjudicationReason, Study, StudyItem
from annotation.services import adjudication
from api.filters import known_query
from api.forms import form_checked
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from common.query import query_choice
from jury.models import RubricVersion

router = Router(tags=["adjudication"])


class AdjudicationState(StrEnum):
    """Where an (item, rubric) stands: not sent yet, sent and waiting for a senior clinician,
    opened (held) by one, or adjudicated."""

    NOT_SENT = "not_sent"
    WAITING = "waiting"
    OPENED = "opened"
    ADJUDICATED = "adjudicated"


# --- shapes --------------------------------------------------------------------------------------


class AdjudicationOut(Schema):
    id: int
    item: int
    position: int = Field(description="The item's number in the study, from 1")
    conversation: UUID
    rubric: str
    rubric_name: str
    reason: AdjudicationReason = Field(description="clinicians apart, or the jury apart")
    gap: float = Field(description="The gap that qualified it when it was sent")
    state: AdjudicationState
    sent_at: datetime
    sent_by: str | None
    adjudicator: str | None = Field(description="The senior clinician holding or who decided")
    score: int | None = Field(description="The adjudicated score, 1 to 5")
    rationale: str
    adjudicated_at: datetime | None


class AdjudicationCandidateOut(Schema):
    item: int
    position: int = Field(description="The item's number in the study, from 1")
    conversation: UUID
    rubric: str
    rubric_name: str
    reason: AdjudicationReason
    gap: float = Field(description="The clinicians' spread, or |jury - clinicians' mean|")
    clinician_scores: list[int]
    jury: float | None = Field(description="The jury's mean on the rubric")
    state: AdjudicationState
    adjudication: int | None = Field(description="Its adjudication's id once sent")


class AdjudicationStateOut(Schema):
    study: int
    locked: bool = Field(description="Once locked, the jury is compared with the clinicians")
    shows_jury: bool = Field(description="Senior clinicians see the jury's mean score")
    waiting: int = Field(description="Adjudications sent and not decided yet")
    candidates: list[AdjudicationCandidateOut] = Field(
        description="Every qualifying pair, largest gap first"
    )


class AdjudicationSendIn(Schema):
    item: int = Field(description="A study item's id (a candidate's `item`)")
    rubric: str = Field(description="The rubric's id (a candidate's `rubric`)")


class JuryShownIn(Schema):
    shows_jury: bool


class AdjudicationFilters(Schema):
    state: Literal["waiting", "opened", "adjudicated"] | None = None
    rubric: str | None = Field(None, description="One rubric's adjudications (its id)")


# --- rows ----------------------------------------------------------------------------------------


def state_of(found: Adjudication | None) -> AdjudicationState:
    if found is None:
        return AdjudicationState.NOT_SENT
    if found.is_done:
        return AdjudicationState.ADJUDICATED
    return AdjudicationState.OPENED if found.adjudicator_id else AdjudicationState.WAITING


def adjudication_out(found: Adjudication, names: dict[str, str]) -> dict:
    return {
        "id": found.pk,
        "item": found.item_id,
        "position": found.item.position + 1,
        "conversation": found.item.conversation.public_id,
        "rubric": found.rubric_id,
        "rubric_name": names.get(found.rubric_id, found.rubric_id),
        "reason": found.reason,
        "gap": found.gap,
        "state": state_of(found),
        "sent_at": found.sent_at,
        "sent_by": found.sent_by.username if found.sent_by else None,
        "adjudicator": found.adjudicator.username if found.adjudicator else None,
        "score": found.score,
        "rationale": found.rationale,
        "adjudicated_at": found.adjudicated_at,
    }


def adjudications_out(page: list[Adjudication]) -> list[dict]:
    names = _rubric_names({found.rubric_id for found in page})
    return [adjudication_out(found, names) for found in page]


def _rubric_names(rubric_ids: set[str]) -> dict[str, str]:
    """Rubric id -> the name of its newest version (one query for any page)."""
    versions = RubricVersion.objects.filter(rubric_id__in=rubric_ids).order_by("version")
    return dict(versions.values_list("rubric_id", "name"))


def candidate_out(row: dict, names: dict[str, str]) -> dict:
    gap, item, sent = row["gap"], row["item"], row["adjudication"]
    return {
        "item": item.pk,
        "position": item.position + 1,
        "conversation": item.conversation.public_id,
        "rubric": gap.rubric,
        "rubric_name": names.get(gap.rubric, gap.rubric),
        "reason": gap.reason,
        "gap": gap.gap,
        "clinician_scores": list(gap.scores),
        "jury": gap.jury,
        "state": state_of(sent),
        "adjudication": sent.pk if sent else None,
    }


def _study(study_id: int) -> Study:
    return get_object_or_404(Study.objects.select_related("project"), pk=study_id)


def _state(study: Study) -> dict:
    names = {version.rubric_id: version.name for version in study.rubric_versions.all()}
    candidates = adjudication.adjudication_candidates(study)
    waiting = adjudication.study_adjudications(study).filter(adjudicated_at__isnull=True)
    return {
        "study": study.pk,
        "locked": study.is_locked,
        "shows_jury": study.adjudication_shows_jury,
        "waiting": waiting.count(),
        "candidates": [candidate_out(row, names) for row in _with_conversations(candidates)],
    }


def _with_conversations(candidates: list[dict]) -> list[dict]:
    """The candidates' conversations read at once (not one query per row)."""
    prefetch_related_objects([row["item"] for row in candidates], "conversation")
    return candidates


# --- routes --------------------------------------------------------------------------------------


@router.get(
    "/studies/{study_id}/adjudication",
    response=responses({200: AdjudicationStateOut}, 404),
    url_name="study_adjudication",
)
def study_adjudication(request: HttpRequest, study_id: int):
    """Every (item, rubric) that qualifies for adjudication (clinicians 2 points or more apart;
    once the study is locked, also the jury 2 points or more from the clinicians' mean) with
    the scores behind it and where it stands, as the study's Adjudication page lists them."""
    return _state(_study(study_id))


@router.get(
    "/studies/{study_id}/adjudications",
    response=responses({200: list[AdjudicationOut]}, 400, 404),
    url_name="study_adjudications",
)
@paginate(RowsCursorPagination, out=adjudications_out)
@known_query(AdjudicationFilters)
def study_adjudication_list(
    request: HttpRequest, study_id: int, filters: Query[AdjudicationFilters]
):
    """The adjudications sent, in the order they were sent, with the senior clinician's score
    and reason once decided; `state` and `rubric` narrow the list."""
    study = _study(study_id)
    found = adjudication.study_adjudications(study)
    if filters.rubric:
        # A rubric the study does not score is a 400 naming it, as every filter's unknown value.
        rubrics = study.rubric_versions.values_list("rubric_id", flat=True).distinct()
        query_choice(request.GET, "rubric", rubrics)
        found = found.filter(rubric_id=filters.rubric)
    if filters.state == AdjudicationState.ADJUDICATED:
        found = found.filter(adjudicated_at__isnull=False)
    elif filters.state == AdjudicationState.OPENED:
        found = found.filter(adjudicated_at__isnull=True, adjudicator__isnull=False)
    elif filters.state == AdjudicationState.WAITING:
        found = found.filter(adjudicated_at__isnull=True, adjudicator__isnull=True)
    return found


@router.post(
    "/studies/{study_id}/adjudications",
    response=responses({201: AdjudicationOut}, 400, 404, 409),
    url_name="adjudication_send",
)
def adjudication_send(request: HttpRequest, study_id: int, payload: AdjudicationSendIn):
    """Send a qualifying (item, rubric) to the senior clinicians enrolled in the project (on
    the rubric's track), who are told once per item. 409 when it does not qualify or was
    sent already."""
    study = _study(study_id)
    form = form_checked(forms.AdjudicationSendForm, payload.dict())
    item = get_object_or_404(StudyItem, pk=form.cleaned_data["item"], study=study)
    try:
        sent = adjudication.adjudication_send(
            study=study, item=item, rubric_id=form.cleaned_data["rubric"], actor=request.user
        )
    except ValidationError as error:
        raise Refused(" ".join(error.messages), status=409) from None
    found = adjudication.study_adjudications(study).get(pk=sent.pk)
    return Status(201, adjudications_out([found])[0])


@router.put(
    "/studies/{study_id}/adjudication/jury",
    response=responses({200: AdjudicationStateOut}, 400, 404),
    url_name="adjudication_jury",
)
def adjudication_jury(request: HttpRequest, study_id: int, payload: JuryShownIn):
    """Whether senior clinicians see the jury's mean score of the item they adjudicate (never
    a judge, a model or an explanation)."""
    study = _study(study_id)
    adjudication.study_jury_for_adjudication_set(
        study, shown=payload.shows_jury, actor=request.user
    )
    return _state(study)
