"""Fidelity review pages (staff only): launch a review from a run, the review's live page with
its report, retry, resume, and the replay of flagged conversations."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import ADMIN_ONLY, STAFF, role_required
from benchmark.forms import optional_decimal
from benchmark.models import Run
from benchmark.services.runs import RunError
from common import live_jobs
from fidelity import forms
from fidelity.models import FidelityReview
from fidelity.services import reports, reviews
from jobs.services.cost_limits import job_resume
from jobs.services.queue import held_work_message
from jobs.services.starts import job_start


@role_required(*STAFF)
def review_new(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    form = forms.ReviewForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            review = reviews.review_launch(run=run, user=request.user, **form.cleaned_data)
        except reviews.ReviewError as error:
            form.add_error(None, str(error))
        else:
            job_start(review)
            if held := held_work_message("the review"):
                messages.error(request, held)
            return redirect("fidelity:review", review.pk)
    context = {"run": run, "form": form, "reviews": run.fidelity_reviews.all()}
    context["scorable"] = run.conversations.scorable().count()
    return render(request, "fidelity/review_new.html", context)


@role_required(*STAFF)
def review_detail(request: HttpRequest, pk: int) -> HttpResponse:
    review = get_object_or_404(FidelityReview.objects.select_related("run"), pk=pk)
    context = {
        "review": review,
        "progress": reviews.review_progress(review),
        "report": reports.review_report(review),
    }
    context["live"] = live_jobs.live_region(
        request, "review-progress", polling=live_jobs.is_running(review.status)
    )
    return live_jobs.live_page(
        request, "fidelity/review_detail.html", context, region="review-live", reload_when_done=True
    )


@role_required(*STAFF)
@require_POST
def review_retry(request: HttpRequest, pk: int) -> HttpResponse:
    review = get_object_or_404(FidelityReview, pk=pk)
    count = reviews.review_relaunch(review)
    job_start(review)
    messages.success(request, f"{count} failed review{'s' if count != 1 else ''} sent again.")
    return redirect("fidelity:review", pk)


@role_required(*STAFF)
@require_POST
def review_resume(request: HttpRequest, pk: int) -> HttpResponse:
    review = get_object_or_404(FidelityReview, pk=pk)
    try:
        job_resume(
            review,
            spent=reviews.review_spent(review),
            models=[review.reviewer_model],
            cost_limit_usd=optional_decimal(request.POST.get("cost_limit")),
        )
    except ValueError as error:
        messages.error(request, str(error))
    else:
        job_start(review)
        messages.success(request, "Resumed.")
    return redirect("fidelity:review", pk)


@role_required(*ADMIN_ONLY)
@require_POST
def review_replay(request: HttpRequest, pk: int) -> HttpResponse:
    review = get_object_or_404(FidelityReview.objects.select_related("run"), pk=pk)
    try:
        replay = reports.flagged_replay(review, user=request.user)
    except RunError as error:
        messages.error(request, str(error))
        return redirect("fidelity:review", pk)
    job_start(replay)
    messages.success(request, f"Replaying {replay.conversations.count()} flagged conversations.")
    return redirect("benchmark:run", replay.pk)
