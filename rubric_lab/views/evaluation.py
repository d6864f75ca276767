"""Rubric lab evaluation pages: near-miss sensitivity studies, coverage (CIA), critique-then-
refine and ablations. Staff only; long work runs in the workers, pages poll its progress."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from audit.downloads import download_response
from benchmark.forms import optional_decimal
from benchmark.models import Conversation
from common import live_jobs
from common.live_jobs import is_running
from common.query import query_object
from jobs.services.starts import job_start
from jury.services import juries
from rubric_lab.engine import perturb
from rubric_lab.forms import evaluation as forms
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    GenerationJob,
    NearMiss,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import (
    ablations,
    budgets,
    coverage,
    exports,
    refine,
    sensitivity,
    study_batches,
)
from rubric_lab.services import evaluation_work as work
from rubric_lab.services.perturbations import perturbation_preview


def _live(request: HttpRequest, template: str, context: dict, *, job) -> HttpResponse:
    """The page, or only its progress region for an htmx poll. The poll that finds the job
    over reloads the page once, so the results appear without the researcher reloading."""
    context["live"] = live_jobs.live_region(request, "progress", polling=is_running(job.status))
    return live_jobs.live_page(request, template, context, region="progress", reload_when_done=True)


def _launched(form, launch: Callable[[dict], Any], refusal: type[Exception]) -> Any:
    """What `launch(cleaned data)` made for a valid form, else None; a refusal by the service
    (e.g. no reference to use) is shown on the form, which keeps every value typed."""
    if not form.is_valid():
        return None
    try:
        return launch(form.cleaned_data)
    except refusal as failure:
        # An upload refusal names every bad row: one error each.
        for message in getattr(failure, "errors", None) or [str(failure)]:
            form.add_error(None, message)
        return None


# --- sensitivity ------------------------------------------------------------------------


@role_required(*STAFF)
def sensitivity_list(request: HttpRequest) -> HttpResponse:
    jury = juries.jury_demo_ensure()
    form = forms.SensitivityLaunchForm(request.POST or None, initial={"jury": jury.pk})
    if request.method == "POST":
        study = _launched(
            form,
            lambda data: sensitivity.study_launch(user=request.user, **data),
            sensitivity.StudyError,
        )
        if study is not None:
            job_start(study)
            messages.success(request, f"Queued {study.pairs.count()} near-miss pairs.")
            return redirect("rubric_lab:sensitivity", study.pk)
    context = {"studies": SensitivityStudy.objects.select_related("run")[:100], "form": form}
    return render(request, "rubric_lab/sensitivity_list.html", context)


@role_required(*STAFF)
def sensitivity_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy.objects.select_related("run", "jury"), pk=pk)
    context = {
        "study": study,
        "progress": sensitivity.study_progress(study),
        "model_costs": budgets.job_model_costs(study),
        "kind": "sensitivity",
    }
    if study.batch:
        context |= study_batches.page_context(sensitivity.BATCHES, study)
    if not live_jobs.is_poll(request):
        results = sensitivity.study_results(study)
        context.update(
            results=results,
            charts=sensitivity.study_charts(results),
            pairs=study.pairs.select_related("conversation")[:500],
        )
    return _live(request, "rubric_lab/sensitivity_detail.html", context, job=study)


@role_required(*STAFF)
@require_POST
def sensitivity_retry(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy, pk=pk)
    sensitivity.study_relaunch(study)
    job_start(study)
    return redirect("rubric_lab:sensitivity", pk)


@role_required(*STAFF)
def sensitivity_export(request: HttpRequest, pk: int, suffix: str) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy, pk=pk)
    return _export(
        request,
        suffix,
        lambda: sensitivity.study_export(study, suffix),
        f"sensitivity-{pk}",
        target=study,
    )


def _export(
    request: HttpRequest, suffix: str, text_of: Callable[[], str], filename: str, *, target
) -> HttpResponse:
    """A result table as a download; an unknown format is a 404 before any work."""
    if suffix not in exports.FORMATS:
        raise Http404("No such format.")
    return download_response(
        request,
        text_of(),
        filename=f"{filename}.{suffix}",
        content_type=exports.content_type(suffix),
        kind="table",
        target=target,
    )


@role_required(*STAFF)
def near_miss_detail(request: HttpRequest, pk: int) -> HttpResponse:
    pair = get_object_or_404(NearMiss.objects.select_related("study", "conversation"), pk=pk)
    rule = perturb.REGISTRY.get(pair.kind)
    return render(request, "rubric_lab/perturbation_detail.html", {"pair": pair, "rule": rule})


@role_required(*STAFF)
def perturbation_preview_page(request: HttpRequest, public_id) -> HttpResponse:
    conversation = get_object_or_404(Conversation, public_id=public_id)
    copies = [(perturb.REGISTRY[c.kind], c) for c in perturbation_preview(conversation)]
    context = {"conversation": conversation, "copies": copies}
    return render(request, "rubric_lab/perturbation_preview.html", context)


# --- coverage -----------------------------------------------------------------------------


@role_required(*STAFF)
def coverage_list(request: HttpRequest) -> HttpResponse:
    posted = request.POST if request.method == "POST" else None
    action = request.POST.get("action")
    upload_form = forms.ExpertCriteriaUploadForm(
        posted if action == "upload" else None, request.FILES or None
    )
    launch_form = forms.CoverageLaunchForm(posted if action == "launch" else None)
    if action == "upload":
        saved = _launched(upload_form, _expert_criteria_save(request), coverage.UploadError)
        if saved is not None:
            messages.success(request, f"Saved {saved.criterion_count} expert criteria.")
            return redirect("rubric_lab:coverage_list")
    elif action == "launch":
        run = _launched(
            launch_form,
            lambda data: coverage.coverage_launch(user=request.user, **data),
            coverage.CoverageError,
        )
        if run is not None:
            job_start(run)
            return redirect("rubric_lab:coverage", run.pk)
    context = {
        "runs": CoverageRun.objects.select_related("generation_job")[:100],
        "upload_form": upload_form,
        "launch_form": launch_form,
    }
    return render(request, "rubric_lab/coverage_list.html", context)


def _expert_criteria_save(request: HttpRequest) -> Callable[[dict], Any]:
    def save(data: dict):
        return coverage.expert_criteria_upload(
            benchmark_set=data["benchmark_set"],
            filename=data["file"].name,
            content=data["text"],
            user=request.user,
        )

    return save


@role_required(*STAFF)
def coverage_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(CoverageRun.objects.select_related("generation_job"), pk=pk)
    context = {
        "run": run,
        "progress": work.progress(run.cases.all()),
        "model_costs": budgets.job_model_costs(run),
        "kind": "coverage",
    }
    if run.batch:
        context |= study_batches.page_context(coverage.BATCHES, run)
    if not live_jobs.is_poll(request):
        others = CoverageRun.objects.exclude(pk=pk).select_related("generation_job")
        other = query_object(request.GET, "compare", others)
        context.update(
            coverage.coverage_results(run),
            failed=run.cases.filter(status="failed"),
            others=others[:100],
            other=other,
            comparison=coverage.coverage_compare(run, other) if other else None,
        )
    return _live(request, "rubric_lab/coverage_detail.html", context, job=run)


@role_required(*STAFF)
def coverage_compare_export(request: HttpRequest, pk: int, other: int, suffix: str):
    run = get_object_or_404(CoverageRun, pk=pk)
    against = get_object_or_404(CoverageRun, pk=other)
    return _export(
        request,
        suffix,
        lambda: coverage.comparison_export(run, against, suffix),
        f"coverage-{pk}-versus-{other}",
        target=run,
    )


@role_required(*STAFF)
def coverage_export(request: HttpRequest, pk: int, suffix: str) -> HttpResponse:
    run = get_object_or_404(CoverageRun, pk=pk)
    return _export(
        request,
        suffix,
        lambda: coverage.coverage_export(run, suffix),
        f"coverage-{pk}",
        target=run,
    )


# --- critique-then-refine -------------------------------------------------------------------


@role_required(*STAFF)
def refine_list(request: HttpRequest) -> HttpResponse:
    form = forms.RefineLaunchForm(request.POST or None)
    if request.method == "POST":
        study = _launched(
            form, lambda data: refine.refine_launch(user=request.user, **data), refine.RefineError
        )
        if study is not None:
            job_start(study)
            return redirect("rubric_lab:refine", study.pk)
    context = {"studies": RefineStudy.objects.select_related("generation_job")[:100], "form": form}
    return render(request, "rubric_lab/refine_list.html", context)


@role_required(*STAFF)
def refine_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(RefineStudy.objects.select_related("generation_job"), pk=pk)
    context = {
        "study": study,
        "progress": work.progress(study.refinements.all()),
        "model_costs": budgets.job_model_costs(study),
        "kind": "refine",
    }
    if study.batch:
        context |= study_batches.page_context(refine.BATCHES, study)
    if not live_jobs.is_poll(request):
        context.update(
            results=refine.refine_results(study),
            rows=study.refinements.select_related("rubric__conversation__entry")[:400],
        )
    return _live(request, "rubric_lab/refine_detail.html", context, job=study)


@role_required(*STAFF)
def refine_export(request: HttpRequest, pk: int, suffix: str) -> HttpResponse:
    study = get_object_or_404(RefineStudy, pk=pk)
    return _export(
        request,
        suffix,
        lambda: refine.refine_export(study, suffix),
        f"refine-{pk}",
        target=study,
    )


# --- ablations --------------------------------------------------------------------------------


@role_required(*STAFF)
def ablation_list(request: HttpRequest) -> HttpResponse:
    form = forms.AblationLaunchForm(request.POST or None)
    if request.method == "POST":
        study = _launched(
            form,
            lambda data: ablations.ablation_launch(user=request.user, **data),
            ablations.AblationError,
        )
        if study is not None:
            ablations.ablation_start(study)
            return redirect("rubric_lab:ablation", study.pk)
    context = {"studies": AblationStudy.objects.select_related("run")[:100], "form": form}
    return render(request, "rubric_lab/ablation_list.html", context)


@role_required(*STAFF)
def ablation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(AblationStudy.objects.select_related("run"), pk=pk)
    context = {
        "study": study,
        "rows": ablations.ablation_rows(study),
        "model_costs": budgets.job_model_costs(study),
        "kind": "ablation",
    }
    return _live(request, "rubric_lab/ablation_detail.html", context, job=study)


# --- resuming a job paused at its cost limit --------------------------------------------------

RESUMABLE = {
    "pipeline": (GenerationJob, "rubric_lab:pipeline"),
    "sensitivity": (SensitivityStudy, "rubric_lab:sensitivity"),
    "coverage": (CoverageRun, "rubric_lab:coverage"),
    "refine": (RefineStudy, "rubric_lab:refine"),
    "ablation": (AblationStudy, "rubric_lab:ablation"),
}


@role_required(*STAFF)
@require_POST
def job_resume(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    if kind not in RESUMABLE:
        raise Http404("No such kind of job.")
    model, page = RESUMABLE[kind]
    job = get_object_or_404(model, pk=pk)
    try:
        started = budgets.job_resume(
            job, cost_limit_usd=optional_decimal(request.POST.get("cost_limit"))
        )
    except ValueError as error:  # a bad amount, or a limit the spend already reaches
        messages.error(request, str(error))
    else:
        for part in started:
            job_start(part)
        messages.success(request, "Resumed.")
    return redirect(page, pk)
