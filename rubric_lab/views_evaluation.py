"""Rubric lab evaluation pages: near-miss sensitivity studies, coverage (CIA), critique-then-
refine and ablations. Staff only; long work runs in the workers, pages poll its progress."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from benchmark.models import BenchmarkSet, Conversation, Run
from jury.models import Jury
from jury.services import juries
from rubric_lab import tasks_evaluation as tasks
from rubric_lab.engine import perturb
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    GenerationJob,
    JudgeSetup,
    NearMiss,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import ablations, coverage, refine, sensitivity
from rubric_lab.services import evaluation_work as work
from rubric_lab.services.perturbations import perturbation_preview


def _live(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """The page, or only its progress region for an htmx poll."""
    if request.htmx and request.GET.get("fragment") == "progress":
        return render(request, f"{template}#progress", context)
    return render(request, template, context)


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _choices() -> dict:
    return {
        "runs": Run.objects.order_by("-pk")[:50],
        "generation_jobs": GenerationJob.objects.order_by("-pk")[:50],
        "juries": Jury.objects.all(),
        "setups": JudgeSetup.choices,
        "perturbations": perturb.REGISTRY.values(),
    }


# --- sensitivity ------------------------------------------------------------------------


@role_required(*STAFF)
def sensitivity_list(request: HttpRequest) -> HttpResponse:
    juries.jury_demo_ensure()
    error, form = "", request.POST
    if request.method == "POST":
        try:
            study = sensitivity.study_launch(
                run=get_object_or_404(Run, pk=_int(form.get("run"), 0)),
                setup=form.get("setup", ""),
                perturber_model=form.get("perturber_model", "").strip(),
                perturbations=form.getlist("perturbations"),
                name=form.get("name", ""),
                judge_model=form.get("judge_model", "").strip(),
                jury=Jury.objects.filter(pk=_int(form.get("jury"), 0)).first(),
                generation_job=GenerationJob.objects.filter(
                    pk=_int(form.get("generation_job"), 0)
                ).first(),
                reference_model=form.get("reference_model", "").strip(),
                max_cases=_int(form.get("max_cases"), 20),
                seed=_int(form.get("seed"), 0),
                use_cache=form.get("use_cache") == "on",
                user=request.user,
            )
        except sensitivity.StudyError as failure:
            error = str(failure)
        else:
            tasks.sensitivity_start(study)
            messages.success(request, f"Queued {study.pairs.count()} near-miss pairs.")
            return redirect("rubric_lab:sensitivity", study.pk)
    context = {"studies": SensitivityStudy.objects.select_related("run")[:100], "error": error,
               "form": form, **_choices()}  # fmt: skip
    return render(request, "rubric_lab/sensitivity_list.html", context)


@role_required(*STAFF)
def sensitivity_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy.objects.select_related("run", "jury"), pk=pk)
    context = {"study": study, "progress": sensitivity.study_progress(study)}
    if not (request.htmx and request.GET.get("fragment") == "progress"):
        results = sensitivity.study_results(study)
        context.update(
            results=results,
            charts=sensitivity.study_charts(results),
            pairs=study.pairs.select_related("conversation")[:500],
        )
    return _live(request, "rubric_lab/sensitivity_detail.html", context)


@role_required(*STAFF)
@require_POST
def sensitivity_retry(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy, pk=pk)
    sensitivity.study_relaunch(study)
    tasks.sensitivity_start(study)
    return redirect("rubric_lab:sensitivity", pk)


@role_required(*STAFF)
def sensitivity_export(request: HttpRequest, pk: int, suffix: str) -> HttpResponse:
    study = get_object_or_404(SensitivityStudy, pk=pk)
    if suffix not in sensitivity.EXPORT_FORMATS:
        raise Http404("No such format.")
    response = HttpResponse(
        sensitivity.study_export(study, suffix),
        content_type=f"{sensitivity.EXPORT_FORMATS[suffix][1]}; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="sensitivity-{pk}.{suffix}"'
    return response


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
    upload_errors, launch_error = [], ""
    if request.method == "POST" and request.POST.get("action") == "upload":
        benchmark_set = get_object_or_404(BenchmarkSet, pk=_int(request.POST.get("set"), 0))
        upload = request.FILES.get("file")
        try:
            if upload is None:
                raise coverage.UploadError(["choose a CSV or JSON file"])
            saved = coverage.expert_criteria_upload(
                benchmark_set=benchmark_set, filename=upload.name,
                content=upload.read().decode("utf-8", errors="replace"), user=request.user,
            )  # fmt: skip
        except coverage.UploadError as failure:
            upload_errors = failure.errors
        else:
            messages.success(request, f"Saved {saved.criterion_count} expert criteria.")
            return redirect("rubric_lab:coverage_list")
    elif request.method == "POST":
        try:
            run = coverage.coverage_launch(
                generation_job=get_object_or_404(
                    GenerationJob, pk=_int(request.POST.get("generation_job"), 0)
                ),
                judge_model=request.POST.get("judge_model", "").strip(),
                name=request.POST.get("name", ""),
                user=request.user,
            )
        except coverage.CoverageError as failure:
            launch_error = str(failure)
        else:
            tasks.coverage_start(run)
            return redirect("rubric_lab:coverage", run.pk)
    context = {
        "runs": CoverageRun.objects.select_related("generation_job")[:100],
        "sets": BenchmarkSet.objects.order_by("-pk")[:50],
        "upload_errors": upload_errors, "launch_error": launch_error, **_choices(),
    }  # fmt: skip
    return render(request, "rubric_lab/coverage_list.html", context)


@role_required(*STAFF)
def coverage_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(CoverageRun.objects.select_related("generation_job"), pk=pk)
    context = {"run": run, "progress": work.progress(run.cases.all())}
    if not (request.htmx and request.GET.get("fragment") == "progress"):
        context.update(coverage.coverage_results(run), failed=run.cases.filter(status="failed"))
    return _live(request, "rubric_lab/coverage_detail.html", context)


# --- critique-then-refine -------------------------------------------------------------------


@role_required(*STAFF)
def refine_list(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        form = request.POST
        try:
            study = refine.refine_launch(
                generation_job=get_object_or_404(
                    GenerationJob, pk=_int(form.get("generation_job"), 0)
                ),
                evaluator_model=form.get("evaluator_model", "").strip(),
                editor_model=form.get("editor_model", "").strip(),
                judge_model=form.get("judge_model", "").strip(),
                max_cases=_int(form.get("max_cases"), 20),
                name=form.get("name", ""),
                user=request.user,
            )
        except refine.RefineError as failure:
            error = str(failure)
        else:
            tasks.refine_start(study)
            return redirect("rubric_lab:refine", study.pk)
    context = {"studies": RefineStudy.objects.select_related("generation_job")[:100],
               "error": error, **_choices()}  # fmt: skip
    return render(request, "rubric_lab/refine_list.html", context)


@role_required(*STAFF)
def refine_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(RefineStudy.objects.select_related("generation_job"), pk=pk)
    context = {"study": study, "progress": work.progress(study.refinements.all())}
    if not (request.htmx and request.GET.get("fragment") == "progress"):
        context.update(
            results=refine.refine_results(study),
            rows=study.refinements.select_related("rubric__conversation")[:400],
        )
    return _live(request, "rubric_lab/refine_detail.html", context)


# --- ablations --------------------------------------------------------------------------------


@role_required(*STAFF)
def ablation_list(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        form = request.POST
        try:
            study = ablations.ablation_launch(
                run=get_object_or_404(Run, pk=_int(form.get("run"), 0)),
                generator_model=form.get("generator_model", "").strip(),
                judge_model=form.get("judge_model", "").strip(),
                perturber_model=form.get("perturber_model", "").strip(),
                reference_model=form.get("reference_model", "").strip(),
                max_cases=_int(form.get("max_cases"), 10),
                user=request.user,
            )
        except ablations.AblationError as failure:
            error = str(failure)
        else:
            tasks.ablation_start(study)
            return redirect("rubric_lab:ablation", study.pk)
    context = {"studies": AblationStudy.objects.select_related("run")[:100], "error": error,
               **_choices()}  # fmt: skip
    return render(request, "rubric_lab/ablation_list.html", context)


@role_required(*STAFF)
def ablation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(AblationStudy.objects.select_related("run"), pk=pk)
    context = {"study": study, "rows": ablations.ablation_rows(study)}
    return _live(request, "rubric_lab/ablation_detail.html", context)
