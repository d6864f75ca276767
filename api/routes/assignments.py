"""Moving a study's work as JSON: its assignments and their state, releasing or extending a
reservation, reassigning one item or all of an annotator's open items, sending submitted work
back, and the study's deadline. Each move calls the service the study and assignment pages
call (annotation.services.moves), so it is checked, kept in the item's history, audited and
told to the annotator as on the page. Input that cannot be used is a 400; a move the work's
state refuses (a locked study, submitted work, a seat taken) is a 409 saying why."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from ninja.pagination import paginate
from pydantic import Field

from accounts.models import Track, User
from annotation.forms import studyops as forms
from annotation.models import Assignment, AssignmentStatus, Study
from annotation.services import enrolment, moves
from api.filters import known_query
from api.forms import form_checked
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.routes.people import PersonRef, person_ref

router = Router(tags=["assignments"])


# --- shapes --------------------------------------------------------------------------------------


class AnnotatorRef(Schema):
    id: int
    username: str


class AssignmentOut(Schema):
    public_id: UUID = Field(description="The assignment's address: /assignments/{public_id}")
    study: int
    item: int
    annotator: AnnotatorRef
    track: Track
    status: AssignmentStatus
    practice: bool = Field(description="An unlicensed annotator's calibration practice")
    synthetic: bool
    imported: bool
    invalidated: bool
    reserved_until: datetime | None
    submitted_at: datetime | None


class MovesOut(Schema):
    """Why each move is refused now ("" when it is offered), as the assignment page says."""

    release: str
    extend: str
    reassign: str
    reopen: str


class AssignmentDetailOut(AssignmentOut):
    moves: MovesOut
    receivers: list[PersonRef] = Field(description="Who may be given the item (`reassign`)")
    extend_hours: list[int] = Field(description="The hours a reservation may be extended by")


class ReassignKeptOut(Schema):
    assignment: AssignmentOut
    reason: str


class ReassignedOut(Schema):
    moved: list[AssignmentOut]
    kept: list[ReassignKeptOut] = Field(description="Items the receiver could not take, with why")


class ReleaseIn(Schema):
    note: str = Field("", description="Kept in the item's history")


class ExtendIn(Schema):
    hours: int = Field(description="1, 4, 24 or 72")


class ReassignIn(Schema):
    to: int = Field(description="The receiving annotator's id (an assignment's `receivers`)")


class ReopenIn(Schema):
    note: str = Field(description="What the annotator should look at again (they are told)")


class DeadlineIn(Schema):
    deadline: datetime | None = Field(description="When annotators should be done; null clears")


class DeadlineOut(Schema):
    study: int
    deadline: datetime | None


class AssignmentFilters(Schema):
    annotator: int | None = Field(None, description="One annotator's assignments (their id)")
    status: AssignmentStatus | None = None
    track: Track | None = None


# --- rows ----------------------------------------------------------------------------------------


def assignment_out(assignment: Assignment) -> dict:
    return {
        "public_id": assignment.public_id,
        "study": assignment.item.study_id,
        "item": assignment.item_id,
        "annotator": {"id": assignment.annotator_id, "username": assignment.annotator.username},
        "track": assignment.track,
        "status": assignment.status,
        "practice": assignment.practice,
        "synthetic": assignment.synthetic,
        "imported": assignment.imported,
        "invalidated": assignment.is_invalidated,
        "reserved_until": assignment.reserved_until,
        "submitted_at": assignment.submitted_at,
    }


def assignments_out(page: list[Assignment]) -> list[dict]:
    return [assignment_out(assignment) for assignment in page]


def assignment_detail_out(assignment: Assignment) -> dict:
    release = moves.release_refusal(assignment)
    return assignment_out(assignment) | {
        "moves": {
            "release": release,
            "extend": release,  # only a reservation in progress runs longer
            "reassign": moves.movable_refusal(assignment),
            "reopen": assignment.reopen_refusal(),
        },
        "receivers": [person_ref(person) for person in _receivers(assignment)],
        "extend_hours": list(moves.EXTEND_HOURS),
    }


def _assignments():
    return Assignment.objects.select_related("item__study__project", "annotator")


def _assignment(public_id: UUID) -> Assignment:
    return get_object_or_404(_assignments(), public_id=public_id)


def _receivers(assignment: Assignment):
    return enrolment.receivers(
        assignment.item.study, track=assignment.track, besides=assignment.annotator
    )


def _state_refused(error: ValidationError) -> Refused:
    return Refused(" ".join(error.messages), status=409)


def _receiver(to: int, receivers, why_not=None) -> User:
    """The receiver, one of `receivers` (the page's form); else a 400 saying why, in the
    rule's words where `why_not(person)` has them."""
    form = forms.ReassignForm({"to": to}, receivers=receivers)
    if form.is_valid():
        return form.cleaned_data["to"]
    person = User.objects.filter(pk=to).first()
    if person is None:
        why = f"There is no account {to}."
    else:
        why = (why_not and why_not(person)) or (
            "Pick an enrolled, licensed, active annotator of the same track."
        )
    raise Refused(why, [{"location": "body.to", "message": why}])


# --- the study's assignments --------------------------------------------------------------------


@router.get(
    "/studies/{study_id}/assignments",
    response=responses({200: list[AssignmentOut]}, 400, 404),
    url_name="study_assignments",
)
@paginate(RowsCursorPagination, out=assignments_out)
@known_query(AssignmentFilters)
def study_assignment_list(request: HttpRequest, study_id: int, filters: Query[AssignmentFilters]):
    """Every assignment of the study, in the order they were opened; `annotator`, `status` and
    `track` narrow the list."""
    study = get_object_or_404(Study, pk=study_id)
    found = _assignments().filter(item__study=study)
    if filters.annotator is not None:
        found = found.filter(annotator_id=filters.annotator)
    if filters.status:
        found = found.filter(status=filters.status)
    if filters.track:
        found = found.filter(track=filters.track)
    return found


@router.post(
    "/studies/{study_id}/annotators/{annotator_id}/reassign",
    response=responses({200: ReassignedOut}, 400, 404),
    url_name="study_reassign_all",
)
def study_reassign_all(request: HttpRequest, study_id: int, annotator_id: int, payload: ReassignIn):
    """Give every open item (in progress, skipped, released) of the annotator in the study to
    another annotator of their track; the items the receiver cannot take stay, each with why."""
    study = get_object_or_404(Study.objects.select_related("project"), pk=study_id)
    giver = get_object_or_404(User, pk=annotator_id)
    receivers = enrolment.receivers(study, track=giver.track, besides=giver)
    to = _receiver(payload.to, receivers)
    result = moves.open_work_reassign(study=study, giver=giver, to=to, actor=request.user)
    return {
        "moved": assignments_out(result.moved),
        "kept": [{"assignment": assignment_out(a), "reason": why} for a, why in result.kept],
    }


@router.put(
    "/studies/{study_id}/deadline",
    response=responses({200: DeadlineOut}, 400, 404, 409),
    url_name="study_deadline",
)
def study_deadline(request: HttpRequest, study_id: int, payload: DeadlineIn):
    """Set or clear (null) the study's deadline; two days before it every enrolled annotator
    with work left is reminded. 409 once the study is locked."""
    study = get_object_or_404(Study, pk=study_id)
    form = form_checked(forms.DeadlineForm, payload.dict())
    try:
        moves.study_deadline_set(study, deadline=form.cleaned_data["deadline"], actor=request.user)
    except ValidationError as error:
        if study.is_locked:
            raise _state_refused(error) from None
        message = " ".join(error.messages)
        raise Refused(message, [{"location": "body.deadline", "message": message}]) from None
    return {"study": study.pk, "deadline": study.deadline}


# --- one assignment -----------------------------------------------------------------------------


@router.get(
    "/assignments/{public_id}",
    response=responses({200: AssignmentDetailOut}, 404),
    url_name="assignment",
)
def assignment_detail(request: HttpRequest, public_id: UUID):
    """The assignment's state, which moves it offers now (or why not) and who may receive it."""
    return assignment_detail_out(_assignment(public_id))


@router.post(
    "/assignments/{public_id}/release",
    response=responses({200: AssignmentDetailOut}, 400, 404, 409),
    url_name="assignment_release",
)
def assignment_release(request: HttpRequest, public_id: UUID, payload: ReleaseIn):
    """Give the reservation's seat back now (the draft stays in the history)."""
    assignment = _assignment(public_id)
    form = form_checked(forms.NoteForm, payload.dict())
    try:
        moves.reservation_release(assignment, actor=request.user, note=form.cleaned_data["note"])
    except ValidationError as error:
        raise _state_refused(error) from None
    return assignment_detail_out(_assignment(public_id))


@router.post(
    "/assignments/{public_id}/extend",
    response=responses({200: AssignmentDetailOut}, 400, 404, 409),
    url_name="assignment_extend",
)
def assignment_extend(request: HttpRequest, public_id: UUID, payload: ExtendIn):
    """Hold the reservation `hours` longer than it now runs."""
    assignment = _assignment(public_id)
    form = form_checked(forms.ExtendForm, payload.dict())
    try:
        moves.reservation_extend(assignment, hours=form.cleaned_data["hours"], actor=request.user)
    except ValidationError as error:
        raise _state_refused(error) from None
    return assignment_detail_out(_assignment(public_id))


@router.post(
    "/assignments/{public_id}/reassign",
    response=responses({200: AssignmentDetailOut}, 400, 404, 409),
    url_name="assignment_reassign",
)
def assignment_reassign(request: HttpRequest, public_id: UUID, payload: ReassignIn):
    """Hand the item, with its draft and history, to another annotator of its track (enrolled,
    licensed, new to the item), who is told."""
    assignment = _assignment(public_id)
    refusal = moves.movable_refusal(assignment)
    if refusal:
        raise Refused(refusal, status=409)
    to = _receiver(
        payload.to, _receivers(assignment), lambda p: moves.receiver_refusal(assignment, p)
    )
    try:
        moves.assignment_reassign(assignment, to=to, actor=request.user)
    except ValidationError as error:
        raise _state_refused(error) from None
    return assignment_detail_out(_assignment(public_id))


@router.post(
    "/assignments/{public_id}/reopen",
    response=responses({200: AssignmentDetailOut}, 400, 404, 409),
    url_name="assignment_reopen",
)
def assignment_reopen(request: HttpRequest, public_id: UUID, payload: ReopenIn):
    """Send submitted work back to its annotator with a note saying what to look at again."""
    assignment = _assignment(public_id)
    form = form_checked(forms.ReopenForm, payload.dict())
    try:
        moves.staff_reopen(assignment, actor=request.user, note=form.cleaned_data["note"])
    except ValidationError as error:
        raise _state_refused(error) from None
    return assignment_detail_out(_assignment(public_id))
