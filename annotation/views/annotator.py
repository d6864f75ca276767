"""Annotator pages: the study queue and the review screen with its htmx autosave.

An assignment is looked up by its public_id *and* its annotator, so another annotator's item
answers 404 exactly like an item that does not exist; so does a study, or an item of it, of a
project the annotator is not enrolled in (annotation.services.enrolment). Everything the
templates show about the conversation comes from `review.review_context`, which blinds it on
the server.
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import role_required
from accounts.middleware import sent_by_the_page, session_seconds_left
from accounts.models import Role
from annotation.forms import annotator as forms
from annotation.models import Assignment, Study
from annotation.services import queue, review, worklist
from annotation.services.annotations import (
    Draft,
    EditConflict,
    Incomplete,
    annotation_autosave,
    annotation_reopen,
    annotation_submit,
    missing_parts,
    time_touch,
)
from annotation.services.guides import guide_examples, guide_render, study_guide
from annotation.services.membership import visible_studies

REVIEW = "annotation/review.html"
annotator_only = role_required(Role.ANNOTATOR)


def _own_assignment(request: HttpRequest, public_id: UUID) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related("item__study", "item__conversation__entry"),
        public_id=public_id,
        annotator=request.user,
        item__study__in=visible_studies(request.user),
    )


def _visible_study(request: HttpRequest, pk: int) -> Study:
    return get_object_or_404(visible_studies(request.user).select_related("project"), pk=pk)


# --- queue ---------------------------------------------------------------------------------


@annotator_only
def queue_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _visible_study(request, pk)
    items = worklist.my_items(study, request.user)
    may_take = queue.can_take(study, request.user)
    if not may_take and not any(items.values()):
        queue.take_check(study, request.user)  # raises StudyClosed with the reason: a 403
    progress = queue.queue_progress(study, request.user)
    all_done = may_take and progress["done"] == progress["total"]
    return render(
        request,
        "annotation/queue.html",
        {
            "study": study,
            "items": items,
            "may_take": may_take,
            "progress": progress,
            "all_done": all_done,
            "next_study": worklist.next_open_study(request.user, after=study) if all_done else None,
            **_guide_context(study_guide(study), request.user),
        },
    )


def _guide_context(guide, annotator) -> dict:
    if guide is None:
        return {"guide": None}
    return {
        "guide": guide,
        "guide_html": guide_render(guide),
        "guide_examples": guide_examples(guide, annotator=annotator),
    }


@annotator_only
@require_POST
def queue_next(request: HttpRequest, pk: int) -> HttpResponse:
    return _open_next(request, _visible_study(request, pk))


def _open_next(request: HttpRequest, study: Study) -> HttpResponse:
    """Redirect to the item the annotator should work on now, or to the queue when none is
    left (StudyClosed, a PermissionDenied, answers 403 with its reason)."""
    assignment = queue.next_assignment(study=study, annotator=request.user)
    if assignment is None:
        messages.success(request, "All done: nothing is left for you in this study. Thank you.")
        return redirect("annotation:queue", study.pk)
    return redirect("annotation:review", assignment.public_id)


# --- review screen -------------------------------------------------------------------------


@annotator_only
def review_page(request: HttpRequest, public_id: UUID) -> HttpResponse:
    assignment = _own_assignment(request, public_id)
    return render(request, REVIEW, _review_context(request, assignment))


def _review_context(request: HttpRequest, assignment: Assignment, **extra) -> dict:
    context = review.review_context(assignment)
    editable = not assignment.edit_refusal()
    reveal = review.calibration_reveal(assignment) if review.can_reveal(assignment) else None
    return (
        context
        | _guide_context(context["guide"], request.user)
        | {
            "rubrics": _panel_rows(context["panel"], assignment, reveal),
            "editable": editable,
            "reopen_refusal": assignment.reopen_refusal(),
            "item_number": worklist.my_item_number(assignment),
            "missing": missing_parts(assignment) if editable else [],
            "progress": queue.queue_progress(assignment.item.study, request.user),
            "skip_form": forms.SkipForm(),
            "session_seconds": session_seconds_left(request.session),
            "save_timeout_seconds": settings.REVIEW_SAVE_TIMEOUT_SECONDS,
            "save_retry_seconds": ",".join(map(str, settings.REVIEW_SAVE_RETRY_SECONDS)),
            "saved_fields": forms.page_fields(assignment, [r.rubric_id for r in context["panel"]]),
            **extra,
        }
    )


def _panel_rows(panel, assignment: Assignment, reveal: dict | None) -> list[dict]:
    """One row per rubric of the panel with what the annotator saved for it (and, after a
    calibration submit, what the jury and peers said)."""
    revealed = {row["rubric_id"]: row for row in reveal["rubrics"]} if reveal else {}
    return [
        {
            "rubric": rubric,
            "score": assignment.scores.get(rubric.rubric_id),
            "feedback": assignment.feedback.get(rubric.rubric_id, ""),
            "links": assignment.event_links.get(rubric.rubric_id, []),
            "reveal": revealed.get(rubric.rubric_id),
        }
        for rubric in panel
    ]


@annotator_only
@require_POST
def autosave(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """The page's save of what changed (merged with another tab's save of other fields): a
    status line with the server's values, the new version and the link chips, or a conflict /
    refusal answered with a 4xx the page still shows (review.js swaps it)."""
    assignment = _own_assignment(request, public_id)
    panel = review.panel_rubrics(assignment.item.study, assignment.track)
    rubric_ids = [r.rubric_id for r in panel]
    try:
        draft, version = forms.draft_from_post(request.POST, rubric_ids)
        seen = forms.seen_from_post(request.POST, rubric_ids)
        saved = annotation_autosave(
            assignment, draft=draft, version=version, seen=seen, actor=request.user
        )
    except EditConflict as conflict:
        return _status(request, assignment, conflict=_conflict(draft, conflict.saved, panel))
    except ValidationError as error:
        return _status(request, assignment, errors=error.messages, status=400)
    except PermissionDenied as refusal:
        return _status(request, assignment, errors=[str(refusal)], status=403)
    context = {
        "assignment": saved,
        "rubrics": _panel_rows(panel, saved, None),
        "missing": missing_parts(saved),
        "editable": True,
        "oob": True,
        "merged": saved.version != version + 1,  # another tab had saved other fields first
        "saved_fields": forms.page_fields(saved, rubric_ids),
    }
    return render(request, f"{REVIEW}#autosave-result", context)


def _status(request, assignment, *, conflict=None, errors=(), status=409) -> HttpResponse:
    context = {"assignment": assignment, "conflict": conflict, "save_errors": errors}
    return render(request, f"{REVIEW}#save-status", context, status=status)


def _conflict(draft: Draft, saved: Assignment, panel) -> dict:
    """What the stale tab sent that differs from what the server holds: shown so nothing is
    lost from view (the service also keeps it in the history). Fields it did not send are not
    its change, so they are not listed."""
    rows = []
    for rubric in panel:
        rid = rubric.rubric_id
        for label, sent, theirs in (
            ("score", draft.scores, saved.scores),
            ("feedback", draft.feedback, saved.feedback),
            ("linked events", draft.event_links, saved.event_links),
        ):
            mine, held = _shown(sent.get(rid)), _shown(theirs.get(rid))
            if rid in sent and mine != held:
                rows.append({"what": f"{rubric.name}: {label}", "mine": mine, "saved": held})
    comment = draft.overall_comment
    if comment is not None and comment != saved.overall_comment:
        rows.append({"what": "Overall comment", "mine": comment, "saved": saved.overall_comment})
    return {"saved_at": saved.saved_at, "rows": rows}


def _shown(value) -> str:
    if value is None:
        return ""
    return " ".join(value) if isinstance(value, list) else str(value)


@annotator_only
@require_POST
def submit(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """Save and submit; then the next item (in a calibration round, first this item's reveal)."""
    assignment = _own_assignment(request, public_id)
    panel = review.panel_rubrics(assignment.item.study, assignment.track)
    try:
        draft, version = forms.draft_from_post(request.POST, [r.rubric_id for r in panel])
        submitted = annotation_submit(assignment, draft=draft, version=version, actor=request.user)
    except Incomplete as incomplete:
        assignment.refresh_from_db()
        context = _review_context(request, assignment, missing=incomplete.missing)
        return render(request, REVIEW, context | {"submit_refused": True})
    except EditConflict as conflict:
        context = _review_context(request, conflict.saved)
        context["conflict"] = _conflict(draft, conflict.saved, panel)
        return render(request, REVIEW, context, status=409)
    except ValidationError as error:
        context = _review_context(request, assignment, save_errors=error.messages)
        return render(request, REVIEW, context, status=400)
    study = submitted.item.study
    if study.is_calibration:
        messages.success(request, "Submitted. Compare your scores with the jury and your peers.")
        return redirect("annotation:review", submitted.public_id)
    messages.success(request, "Submitted.")
    return _open_next(request, study)


@annotator_only
@require_POST
def skip(request: HttpRequest, public_id: UUID) -> HttpResponse:
    assignment = _own_assignment(request, public_id)
    refusal = assignment.edit_refusal()
    if refusal:  # before the form: a locked item is refused, not re-asked
        raise PermissionDenied(refusal)
    form = forms.SkipForm(request.POST)
    if not form.is_valid():
        context = _review_context(request, assignment, skip_form=form)
        return render(request, REVIEW, context, status=400)
    queue.assignment_skip(assignment, reason=form.cleaned_data["reason"], actor=request.user)
    messages.info(request, "Skipped: the item comes back at the end of your queue.")
    return _open_next(request, assignment.item.study)


@annotator_only
@require_POST
def reopen(request: HttpRequest, public_id: UUID) -> HttpResponse:
    assignment = _own_assignment(request, public_id)
    annotation_reopen(assignment, actor=request.user)  # PermissionDenied when locked: 403
    messages.info(request, "Reopened: your changes are saved as you go; submit again when done.")
    return redirect("annotation:review", assignment.public_id)


@sent_by_the_page
@annotator_only
@require_POST
def heartbeat(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """A sign of life while the page is visible: time on task, counted once. The page sends it
    by itself, so it keeps the session only as of the person's last action it reports."""
    time_touch(_own_assignment(request, public_id))
    return HttpResponse(status=204)
