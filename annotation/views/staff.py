"""Researcher pages of a clinician study: list and create, dashboard, lock, one annotation with
its history, export and import, the round report and calibration guides. Staff only: these
pages show models, jury scores and who scored what."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from annotation.engine.round_report import MIN_SCORES_FOR_TENDENCY, TENDENCY_THRESHOLD
from annotation.forms.staff import GuideForm, ImportForm, InvalidateForm, StudyForm
from annotation.models import Assignment, CalibrationGuide, Project, Study
from annotation.services import dashboard, exchange, guides, round_report
from annotation.services.annotations import annotation_invalidate
from annotation.services.history import ANNOTATION_FIELDS
from annotation.services.studies import study_create, study_guide_show, study_lock
from annotation.views.studyops import assignment_actions, study_operations
from audit.downloads import download_response
from common import live_jobs
from common.query import query_flag
from jury.engine.score_gaps import MAJOR_POINTS

# A study's progress moves at the pace of people, not workers: poll it less often.
STUDY_POLL_EVERY = "5s"

# --- studies -----------------------------------------------------------------------------------


@role_required(*STAFF)
def study_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "annotation/staff/studies.html",
        {"rows": dashboard.study_rows(Study.objects.all())},
    )


@role_required(*STAFF)
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = study_create(
                spec=form.spec(),
                scoring_jobs=list(form.cleaned_data["scoring_jobs"]),
                rubric_versions=list(form.cleaned_data["rubric_versions"]),
                created_by=request.user,
            )
        except ValidationError as error:
            form.add_service_errors(error.message_dict)
        else:
            messages.success(request, f"Created {study.name}: {study.items.count()} items drawn.")
            return redirect("annotation:staff_study", study.pk)
    return render(
        request,
        "annotation/staff/study_form.html",
        {"form": form, "projects": Project.objects.values_list("name", flat=True)},
    )


@role_required(*STAFF)
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    context = {"study": study, "progress": dashboard.study_progress(study)}
    # Clinicians' work has no end the workers report: poll until the study is locked.
    context["live"] = live_jobs.live_region(
        request, "study-progress", polling=not study.is_locked, every=STUDY_POLL_EVERY
    )
    if not live_jobs.is_poll(request):
        context |= {
            "coverage": dashboard.study_coverage(study),
            "versions": study.rubric_versions.all(),
            "jobs": study.scoring_jobs.select_related("jury", "run"),
            "guides": study.guides.order_by("-created_at"),
            "published": guides.published_guide(study.project),
            **study_operations(study),
        }
    return live_jobs.live_page(
        request, "annotation/staff/study_detail.html", context, region="study-progress"
    )


@role_required(*STAFF)
def study_lock_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation (what locking freezes); POST locks."""
    study = get_object_or_404(Study, pk=pk)
    if request.method == "POST" and not study.is_locked:
        study_lock(study, actor=request.user)
        messages.success(request, f"Locked {study.name}: no annotation can change any more.")
        return redirect("annotation:staff_study", pk)
    return render(
        request,
        "annotation/staff/study_lock.html",
        {"study": study, "progress": dashboard.study_progress(study)},
    )


@role_required(*STAFF)
@require_POST
def study_guide_setting(request: HttpRequest, pk: int) -> HttpResponse:
    """Show (or stop showing) the project's calibration guide to a target study's annotators."""
    study = get_object_or_404(Study, pk=pk)
    shown = query_flag(request.POST, "shown", on="1", off="0")
    try:
        study_guide_show(study, shown=shown, actor=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        what = "now see" if shown else "no longer see"
        messages.success(request, f"Annotators of {study.name} {what} the calibration guide.")
    return redirect("annotation:staff_study", pk)


# --- one annotation ----------------------------------------------------------------------------


def _assignment(public_id) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related(
            "item__study__project", "item__conversation__run_agent", "annotator", "invalidated_by"
        ),
        public_id=public_id,
    )


@role_required(*STAFF)
def assignment_detail(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    return _assignment_page(request, assignment, InvalidateForm())


def _assignment_page(request, assignment: Assignment, form: InvalidateForm) -> HttpResponse:
    study = assignment.item.study
    names = {v.rubric_id: v.name for v in study.rubric_versions.all()}
    return render(
        request,
        "annotation/staff/assignment.html",
        {
            "assignment": assignment,
            "study": study,
            "rubrics": [
                {
                    "name": names.get(rubric_id, rubric_id),
                    "score": score,
                    "feedback": assignment.feedback.get(rubric_id, ""),
                    "events": assignment.event_links.get(rubric_id, []),
                }
                for rubric_id, score in assignment.scores.items()
            ],
            "history": [
                {"entry": entry, "changes": _changes(entry.old, entry.new, names)}
                for entry in assignment.history.select_related("actor")
            ],
            "form": form,
            **assignment_actions(assignment),
        },
    )


def _changes(old: dict, new: dict, names: dict[str, str]) -> list[dict]:
    """Field-by-field old -> new of one history entry (per rubric for the dict fields)."""
    changes = []
    for name in ANNOTATION_FIELDS:
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if isinstance(before or after, dict):
            for key in sorted(set(before or {}) | set(after or {})):
                b, a = (before or {}).get(key), (after or {}).get(key)
                if b != a:
                    label = f"{name.replace('_', ' ')}: {names.get(key, key)}"
                    changes.append({"field": label, "old": b, "new": a})
        else:
            changes.append({"field": name.replace("_", " "), "old": before, "new": after})
    return changes


@role_required(*STAFF)
@require_POST
def assignment_invalidate(request: HttpRequest, public_id) -> HttpResponse:
    assignment = _assignment(public_id)
    form = InvalidateForm(request.POST)
    if form.is_valid():
        try:
            annotation_invalidate(
                assignment, actor=request.user, reason=form.cleaned_data["reason"]
            )
        except ValidationError as error:
            form.add_error("reason", error.message_dict.get("reason", error.messages))
        else:
            messages.success(request, "Invalidated; the annotation and its history are kept.")
            return redirect("annotation:staff_assignment", public_id)
    return _assignment_page(request, assignment, form)


# --- export and import -------------------------------------------------------------------------


@role_required(*STAFF)
def study_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in exchange.EXPORT_FORMATS:
        raise Http404("Export formats: csv, jsonl, parquet.")
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    pseudonymise = query_flag(request.GET, "pseudonymise", on="1")
    content, content_type = exchange.export_file(study, fmt, pseudonymise=pseudonymise)
    suffix = "-pseudonymised" if pseudonymise else ""
    return download_response(
        request,
        content,
        filename=f"study-{pk}-annotations{suffix}.{fmt}",
        content_type=content_type,
        kind="annotations",
        target=study,
        synthetic=exchange.has_synthetic_work(study),
    )


@role_required(*STAFF)
def study_import(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    form = ImportForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    unconfirmed: list[exchange.NamedAccount] = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = exchange.annotations_import(
                study,
                data=upload.read(),
                filename=upload.name,
                actor=request.user,
                confirmed_accounts=form.confirmed_accounts(),
            )
        except exchange.ImportRejected as error:
            problems, unconfirmed = error.problems, error.unconfirmed
            form.ask_confirmation([account.username for account in unconfirmed])
        else:
            messages.success(
                request, f"Imported {result.assignments} annotations ({result.rows} rows)."
            )
            if result.created_users:
                messages.info(
                    request,
                    "Created as inactive annotators (no password): "
                    + ", ".join(result.created_users),
                )
            if result.existing_accounts:
                messages.info(
                    request,
                    "Saved as the work of existing accounts, as you confirmed: "
                    + ", ".join(result.existing_accounts),
                )
            return redirect("annotation:staff_study", pk)
    return render(
        request,
        "annotation/staff/import.html",
        {"study": study, "form": form, "problems": problems, "unconfirmed": unconfirmed},
    )


# --- calibration: round report and guides ------------------------------------------------------


@role_required(*STAFF)
def round_report_view(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    include_synthetic = query_flag(request.GET, "synthetic", on="include")
    return render(
        request,
        "annotation/staff/round_report.html",
        {
            "study": study,
            "data": round_report.study_round_report(study, include_synthetic=include_synthetic),
            "include_synthetic": include_synthetic,
            "major": MAJOR_POINTS,
            "threshold": TENDENCY_THRESHOLD,
            "min_scores": MIN_SCORES_FOR_TENDENCY,
        },
    )


@role_required(*STAFF)
def guide_new(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("project"), pk=pk)
    return _guide_form(request, study, None)


@role_required(*STAFF)
def guide_detail(request: HttpRequest, pk: int) -> HttpResponse:
    guide = get_object_or_404(
        CalibrationGuide.objects.select_related("project", "after_study"), pk=pk
    )
    if guide.published_at is not None or guide.after_study is None:
        return render(
            request,
            "annotation/staff/guide.html",
            {
                "guide": guide,
                "body": guides.guide_render(guide),
                "examples": guides.guide_examples(guide, annotator=None),
            },
        )
    return _guide_form(request, guide.after_study, guide)


def _guide_form(request, study: Study, guide: CalibrationGuide | None) -> HttpResponse:
    items = list(study.items.select_related("conversation__entry"))
    initial = {}
    if guide is not None:
        initial = {"title": guide.title, "body_markdown": guide.body_markdown}
        initial |= {f"note_{e['item']}": e["note"] for e in guide.examples}
    form = GuideForm(request.POST or None, items=items, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            guide = guides.guide_save(
                study=study,
                title=form.cleaned_data["title"],
                body_markdown=form.cleaned_data["body_markdown"],
                examples=form.examples(),
                actor=request.user,
                guide=guide,
            )
        except ValidationError as error:
            for field, texts in error.message_dict.items():
                form.add_error(field if field in form.fields else None, texts)
        else:
            messages.success(request, "Guide saved as a draft; annotators see it once published.")
            return redirect("annotation:staff_guide", guide.pk)
    preview = guides.guide_render(guide) if guide is not None else ""
    return render(
        request,
        "annotation/staff/guide_form.html",
        {"study": study, "guide": guide, "form": form, "preview": preview},
    )


@role_required(*STAFF)
@require_POST
def guide_publish(request: HttpRequest, pk: int) -> HttpResponse:
    guide = get_object_or_404(CalibrationGuide, pk=pk)
    guides.guide_publish(guide, actor=request.user)
    messages.success(request, f"Published; annotators of {guide.project} now see this guide.")
    return redirect("annotation:staff_guide", pk)
