"""Researcher pages for running a study: a project's members (enrolment and quotas), the
deadline and who is behind, moving work (release, extend, reassign one item or all of an
annotator's open items, send submitted work back), and the adjudication queue of a study.
Thin: every rule is in annotation.services (enrolment, moves, adjudication)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from accounts.models import User
from annotation.forms import studyops as forms
from annotation.models import Assignment, Project, ProjectMember, Study, StudyItem
from annotation.services import adjudication, dashboard, enrolment, moves
from annotation.services.second_phase import SecondPhaseSpec, study_second_phase

staff_only = role_required(*STAFF)


def _refused(request: HttpRequest, error: ValidationError) -> None:
    messages.error(request, " ".join(error.messages))


# --- members -------------------------------------------------------------------------------------


@staff_only
def members(request: HttpRequest, pk: int) -> HttpResponse:
    """GET lists the project's members; POST enrols the ticked annotators."""
    project = get_object_or_404(Project, pk=pk)
    enrolled = project.members.active().values("annotator_id")
    candidates = enrolment.enrolable_people().exclude(pk__in=enrolled)
    form = forms.EnrolForm(request.POST or None, candidates=candidates)
    if request.method == "POST" and form.is_valid():
        people = list(form.cleaned_data["people"])
        try:
            for person in people:
                enrolment.member_enrol(
                    project=project,
                    annotator=person,
                    quota=form.cleaned_data["quota"],
                    actor=request.user,
                )
        except ValidationError as error:
            _refused(request, error)
        else:
            names = ", ".join(p.username for p in people)
            messages.success(request, f"Enrolled {names}; each is told by email.")
        return redirect("annotation:staff_members", pk)
    return render(
        request,
        "annotation/staff/members.html",
        {
            "project": project,
            "form": form,
            "quota_form": forms.QuotaForm(),
            "studies": project.studies.all(),
            **enrolment.project_members(project),
        },
    )


def _member(pk: int) -> ProjectMember:
    return get_object_or_404(ProjectMember.objects.select_related("project", "annotator"), pk=pk)


@staff_only
@require_POST
def member_quota(request: HttpRequest, pk: int) -> HttpResponse:
    member = _member(pk)
    form = forms.QuotaForm(request.POST)
    if form.is_valid():
        enrolment.member_quota_set(member, quota=form.cleaned_data["quota"], actor=request.user)
        messages.success(request, f"Quota of {member.annotator.username} saved.")
    else:
        messages.error(request, " ".join(form.errors.get("quota", ["Not a quota."])))
    return redirect("annotation:staff_members", member.project_id)


@staff_only
@require_POST
def member_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    member = _member(pk)
    try:
        released = enrolment.member_withdraw(member, actor=request.user)
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(
            request,
            f"Withdrew {member.annotator.username} from {member.project.name}: "
            f"{released} reservation{'s' if released != 1 else ''} released, submitted work kept.",
        )
    return redirect("annotation:staff_members", member.project_id)


# --- the study: deadline, and all of an annotator's open items ------------------------------


@staff_only
@require_POST
def study_deadline(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    form = forms.DeadlineForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(form.errors["deadline"])
        moves.study_deadline_set(study, deadline=form.cleaned_data["deadline"], actor=request.user)
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, "Deadline saved." if study.deadline else "Deadline cleared.")
    return redirect("annotation:staff_study", pk)


@staff_only
@require_POST
def study_second_phase_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    form = forms.SecondPhaseForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError([f"{name}: {' '.join(e)}" for name, e in form.errors.items()])
        added = study_second_phase(
            study, spec=SecondPhaseSpec(**form.cleaned_data), actor=request.user
        )
    except ValidationError as error:
        _refused(request, error)
    else:
        many = "" if len(added) == 1 else "s"
        messages.success(
            request, f"Added {len(added)} conversation{many} to the study (second phase)."
        )
    return redirect("annotation:staff_study", pk)


@staff_only
@require_POST
def study_reassign_all(request: HttpRequest, pk: int, annotator: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    giver = get_object_or_404(User, pk=annotator)
    form = forms.ReassignForm(
        request.POST, receivers=enrolment.receivers(study, track=giver.track, besides=giver)
    )
    if not form.is_valid():
        messages.error(request, "Pick an enrolled, licensed annotator of the same track.")
        return redirect("annotation:staff_study", pk)
    result = moves.open_work_reassign(
        study=study, giver=giver, to=form.cleaned_data["to"], actor=request.user
    )
    to = form.cleaned_data["to"].username
    messages.success(request, f"Gave {len(result.moved)} open item(s) of {giver.username} to {to}.")
    for _, why in result.kept:
        messages.warning(request, f"Kept with {giver.username}: {why}")
    return redirect("annotation:staff_study", pk)


# --- one assignment ---------------------------------------------------------------------------


def _assignment(public_id) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related("item__study__project", "annotator"),
        public_id=public_id,
    )


def _back(assignment: Assignment) -> HttpResponse:
    return redirect("annotation:staff_assignment", assignment.public_id)


@staff_only
@require_POST
def assignment_release(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    form = forms.NoteForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    try:
        moves.reservation_release(assignment, actor=request.user, note=note)
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, "Released: the seat is free; the draft stays in the history.")
    return _back(assignment)


@staff_only
@require_POST
def assignment_extend(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    form = forms.ExtendForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("Pick how many hours to extend by.")
        extended = moves.reservation_extend(
            assignment, hours=form.cleaned_data["hours"], actor=request.user
        )
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, f"Reserved until {extended.reserved_until:%Y-%m-%d %H:%M} UTC.")
    return _back(assignment)


@staff_only
@require_POST
def assignment_reassign(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    receivers = enrolment.receivers(
        assignment.item.study, track=assignment.track, besides=assignment.annotator
    )
    form = forms.ReassignForm(request.POST, receivers=receivers)
    try:
        if not form.is_valid():
            raise ValidationError("Pick an enrolled, licensed annotator of the same track.")
        moved = moves.assignment_reassign(
            assignment, to=form.cleaned_data["to"], actor=request.user
        )
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(
            request, f"Reassigned to {moved.annotator.username}, draft and history kept."
        )
    return _back(assignment)


@staff_only
@require_POST
def assignment_reopen(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    form = forms.ReopenForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("Say what the annotator should look at again.")
        moves.staff_reopen(assignment, actor=request.user, note=form.cleaned_data["note"])
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, f"Reopened for {assignment.annotator.username}, who is told.")
    return _back(assignment)


def assignment_actions(assignment: Assignment) -> dict:
    """What the staff assignment page offers for moving this assignment, and why not."""
    study = assignment.item.study
    return {
        "release_refusal": moves.release_refusal(assignment),
        "reassign_refusal": moves.movable_refusal(assignment),
        "reopen_refusal": assignment.reopen_refusal(),
        "reassign_form": forms.ReassignForm(
            receivers=enrolment.receivers(
                study, track=assignment.track, besides=assignment.annotator
            )
        ),
        "extend_form": forms.ExtendForm(),
        "reopen_form": forms.ReopenForm(),
    }


# --- adjudication (researcher side) -----------------------------------------------------------


@staff_only
def study_adjudication(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    names = {v.rubric_id: v.name for v in study.rubric_versions.all()}
    candidates = adjudication.adjudication_candidates(study)
    sent = list(adjudication.study_adjudications(study))
    for row in candidates:
        row["rubric_name"] = names.get(row["gap"].rubric, row["gap"].rubric)
    for row in sent:
        row.rubric_name = names.get(row.rubric_id, row.rubric_id)
    return render(
        request,
        "annotation/staff/adjudication.html",
        {"study": study, "candidates": candidates, "adjudications": sent},
    )


@staff_only
@require_POST
def adjudication_send(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    form = forms.AdjudicationSendForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick an item and a rubric from the list below.")
        return redirect("annotation:staff_adjudication", pk)
    item = get_object_or_404(StudyItem, pk=form.cleaned_data["item"], study=study)
    try:
        adjudication.adjudication_send(
            study=study, item=item, rubric_id=form.cleaned_data["rubric"], actor=request.user
        )
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, f"Sent item #{item.position + 1} to the senior clinicians.")
    return redirect("annotation:staff_adjudication", pk)


@staff_only
@require_POST
def adjudication_jury(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    shown = request.POST.get("shows_jury") == "1"
    adjudication.study_jury_for_adjudication_set(study, shown=shown, actor=request.user)
    messages.success(
        request,
        "Senior clinicians now see the jury's mean."
        if shown
        else "Senior clinicians no longer see the jury's mean.",
    )
    return redirect("annotation:staff_adjudication", pk)


def study_operations(study: Study) -> dict:
    """The study page's *Annotators and deadline* section: who is behind, and the forms."""
    rows = dashboard.study_pace(study)
    for row in rows:
        person = row["annotator"]
        row["reassign_form"] = forms.ReassignForm(
            receivers=enrolment.receivers(study, track=person.track, besides=person)
        )
    deadline = forms.DeadlineForm(initial={"deadline": study.deadline})
    return {
        "pace": rows,
        "deadline_form": deadline,
        "second_phase_form": forms.SecondPhaseForm(),
        "second_phase": (study.coverage or {}).get("second_phase"),
        "adjudications_waiting": adjudication.study_adjudications(study)
        .filter(adjudicated_at__isnull=True)
        .count(),
    }
