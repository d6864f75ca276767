"""A study's calibration page: calibrated jury variants measured on held-out conversations,
scoring the examples variant, the learning curve, promoting a variant and re-scoring with it.
Staff only; the work is in alignment.services.calibration."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from alignment.services import calibration
from annotation.models import Study
from common import live_jobs
from common.query import query_choice, query_flag, query_int
from jury.services.scoring import ScoringError, scoring_start

SYNTHETIC = "include"


@role_required(*STAFF)
def calibration_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    include_synthetic = _include_synthetic(request)
    inputs = calibration.calibration_inputs(study, include_synthetic=include_synthetic)
    folds = calibration.example_folds(study, inputs) if inputs.items else []
    progress = calibration.examples_progress(folds)
    running = bool(progress and progress["running"])
    context = {
        "study": study,
        "progress": progress,
        "include_synthetic": include_synthetic,
        "live": live_jobs.live_region(request, "calibration-progress", polling=running),
    }
    if not live_jobs.is_poll(request):
        curve_variant = query_choice(
            request.GET,
            "curve",
            calibration.curve_variants(),
            default=calibration.DEFAULT_CURVE_VARIANT,
        )
        context |= {
            "page": calibration.calibration_page(
                study, include_synthetic=include_synthetic, curve_variant=curve_variant
            ),
            "curve_variants": calibration.curve_variant_choices(),
            "promoted": calibration.promoted_versions(study),
            "synthetic_query": _synthetic_query(include_synthetic),
        }
    # The poll that finds the fold jobs finished reloads the page, so the examples row fills in.
    return live_jobs.live_page(
        request,
        "alignment/calibration.html",
        context,
        region="calibration-progress",
        reload_when_done=True,
    )


@role_required(*STAFF)
def examples_launch(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what scoring with examples costs; POST: launch the fold juries' jobs."""
    study = get_object_or_404(Study, pk=pk)
    include_synthetic = _include_synthetic(request)
    if request.method == "POST":
        try:
            jobs = calibration.examples_launch(
                study, include_synthetic=include_synthetic, user=request.user
            )
        except (calibration.CalibrationPageError, ScoringError) as error:
            messages.error(request, str(error))
        else:
            queued = sum(scoring_start(job) for job in jobs)
            messages.success(
                request,
                f"Scoring with examples: {queued} judge calls queued on {len(jobs)} job(s).",
            )
        return redirect(_page_url(study, include_synthetic))
    inputs = calibration.calibration_inputs(study, include_synthetic=include_synthetic)
    return render(
        request,
        "alignment/calibration_examples.html",
        {
            "study": study,
            "cost": calibration.examples_cost(study, inputs) if inputs.items else None,
            "include_synthetic": include_synthetic,
            "synthetic_query": _synthetic_query(include_synthetic),
        },
    )


@role_required(*STAFF)
@require_POST
def promote(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    include_synthetic = _include_synthetic(request)
    try:
        jury = calibration.variant_promote(
            study,
            variant=request.POST.get("variant", ""),
            include_synthetic=include_synthetic,
            user=request.user,
        )
    except calibration.CalibrationPageError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Promoted to {jury.name}. Re-score the study with it below.")
    return redirect(f"{_page_url(study, include_synthetic)}#promoted")


@role_required(*STAFF)
@require_POST
def promoted_rescore(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    jury_pk = query_int(request.POST, "jury", default=0)
    try:
        jobs = calibration.promoted_rescore(study, jury_pk=jury_pk, user=request.user)
    except (calibration.CalibrationPageError, ScoringError) as error:
        messages.error(request, str(error))
        return redirect(f"{reverse('alignment:calibration', args=[study.pk])}#promoted")
    queued = sum(scoring_start(job) for job in jobs)
    messages.success(request, f"Queued {queued} judge calls on {len(jobs)} job(s).")
    return redirect("alignment:loop_comparison", study.pk)


def _include_synthetic(request: HttpRequest) -> bool:
    params = request.POST if request.method == "POST" else request.GET
    return query_flag(params, "synthetic", on=SYNTHETIC)


def _synthetic_query(include_synthetic: bool) -> str:
    return f"?synthetic={SYNTHETIC}" if include_synthetic else ""


def _page_url(study: Study, include_synthetic: bool) -> str:
    url = reverse("alignment:calibration", args=[study.pk])
    return f"{url}{_synthetic_query(include_synthetic)}"
