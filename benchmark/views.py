"""Benchmark pages: distributions, benchmark sets and entries, agents, runs, conversations."""

from __future__ import annotations

import os

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import ADMIN_ONLY, STAFF, role_required
from audit.downloads import download_response
from benchmark import forms
from benchmark.engine.distribution import DistributionError
from benchmark.engine.distribution_report import report_csv
from benchmark.engine.parquet_export import CONTENT_TYPE as PARQUET
from benchmark.models import (
    AgentConfig,
    BenchmarkEntry,
    BenchmarkSet,
    Conversation,
    Distribution,
    Run,
)
from benchmark.services import agents as agent_services
from benchmark.services import (
    case_batches,
    cases,
    exports,
    forecasts,
    imports,
    manifests,
    reports,
    runs,
    sandbox_preview,
)
from benchmark.services.run_control import run_control as run_control_apply
from benchmark.services.trace_marks import trace_marks
from common import live_jobs
from common.live_jobs import is_running
from common.query import query_choice, query_object, query_page
from jobs.services import batches
from jobs.services.accounting import (
    caching_summary,
    cost_by_purpose,
    cost_summary,
    seeds_by_purpose,
)
from jobs.services.processes import holder_of
from jobs.services.queue import held_work_message
from jobs.services.retries import row_retries
from jobs.services.starts import job_start
from llm.engine.forecast import page_context as forecast_page_context
from llm.services import endpoints as endpoint_services
from llm.services import prices

# The live regions of the set and run pages an htmx request may ask for alone.
FRAGMENTS = ("progress", "entries")

# What the run page says after each of benchmark.services.run_control.RUN_ACTIONS.
RUN_ACTION_DONE = {
    "pause": "Paused: no new conversations start; running ones finish.",
    "cancel": "Cancelled: waiting conversations will not run.",
    "resume": "Resumed.",
}

# --- distributions ------------------------------------------------------------------------


@role_required(*STAFF)
def distributions(request: HttpRequest) -> HttpResponse:
    cases.distribution_default_ensure()
    return render(
        request, "benchmark/distributions.html", {"distributions": Distribution.objects.all()}
    )


@role_required(*STAFF)
def distribution_new(request: HttpRequest) -> HttpResponse:
    base = query_object(request.GET, "from", Distribution.objects.all())
    form = forms.DistributionForm(request.POST or None, request.FILES or None, base=base)
    if request.method == "POST" and form.is_valid():
        try:
            distribution = cases.distribution_create(
                name=form.cleaned_data["name"],
                yaml_text=form.cleaned_data["yaml_text"],
                user=request.user,
            )
        except DistributionError as error:
            form.add_problems(error.problems)
        else:
            messages.success(request, f"Saved distribution {distribution.name}.")
            return redirect("benchmark:distribution", distribution.pk)
    return render(request, "benchmark/distribution_form.html", {"form": form, "base": base})


@role_required(*STAFF)
def distribution_detail(request: HttpRequest, pk: int) -> HttpResponse:
    distribution = get_object_or_404(Distribution, pk=pk)
    return render(
        request,
        "benchmark/distribution_detail.html",
        {
            "distribution": distribution,
            "report": reports.distribution_targets(distribution),
        },
    )


# --- benchmark sets and entries ---------------------------------------------------------


@role_required(*STAFF)
def sets(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "benchmark/sets.html",
        {
            "sets": BenchmarkSet.objects.select_related("distribution"),
        },
    )


@role_required(*STAFF)
def set_new(request: HttpRequest) -> HttpResponse:
    cases.distribution_default_ensure()
    form = forms.BenchmarkSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            benchmark_set = cases.benchmark_set_create(user=request.user, **form.cleaned_data)
        except cases.BenchmarkSetError as error:
            form.add_error(None, str(error))
        else:
            job_start(benchmark_set)
            messages.success(request, f"Generating {benchmark_set.size} entries in the background.")
            if held := held_work_message("the benchmark set"):
                messages.error(request, held)
            # (A launch with a cost limit was refused above if its model had no price.)
            for model in forms.unpriced_models([benchmark_set.generator_model]):
                messages.warning(request, forms.unpriced_warning(model))
            return redirect("benchmark:set", benchmark_set.pk)
    return render(request, "benchmark/set_form.html", {"form": form})


@role_required(*STAFF)
def set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    benchmark_set = get_object_or_404(BenchmarkSet.objects.select_related("distribution"), pk=pk)
    entries, filters = reports.filtered_entries(benchmark_set, request.GET)
    context = {
        "set": benchmark_set,
        "progress": benchmark_set.progress(),
        "page": query_page(request.GET, Paginator(entries, 50)),
        "filters": filters,
        "query": reports.query_without_page(request),
        "batches": case_batches.batch_progress(benchmark_set) if benchmark_set.batch else [],
        "batch_poll_seconds": round(batches.poll_seconds()),
    }
    context["live"] = live_jobs.live_region(
        request,
        "set-progress",
        polling=is_running(benchmark_set.status),
        include="#entry-filter-form, #entry-page",
    )
    if request.htmx and query_choice(request.GET, "fragment", FRAGMENTS) == "entries":
        return render(request, "benchmark/set_detail.html#entry-table", context)
    return live_jobs.live_page(
        request, "benchmark/set_detail.html", context, region="set-live", fragments=FRAGMENTS
    )


@role_required(*STAFF)
@require_POST
def set_retry(request: HttpRequest, pk: int) -> HttpResponse:
    benchmark_set = get_object_or_404(BenchmarkSet, pk=pk)
    count = cases.benchmark_set_retry_failed(benchmark_set)
    job_start(benchmark_set)
    messages.success(request, f"Retrying {count} failed entries.")
    if held := held_work_message("the retry"):
        messages.error(request, held)
    return redirect("benchmark:set", pk)


@role_required(*STAFF)
@require_POST
def set_resume(request: HttpRequest, pk: int) -> HttpResponse:
    benchmark_set = get_object_or_404(BenchmarkSet, pk=pk)
    try:
        cases.benchmark_set_resume(
            benchmark_set, cost_limit_usd=forms.optional_decimal(request.POST.get("cost_limit"))
        )
    except ValueError as error:  # a bad amount, or a limit the spend already reaches
        messages.error(request, str(error))
    else:
        job_start(benchmark_set)
        messages.success(request, "Resumed.")
        if held := held_work_message("the benchmark set"):
            messages.error(request, held)
    return redirect("benchmark:set", pk)


@role_required(*STAFF)
def set_report(request: HttpRequest, pk: int) -> HttpResponse:
    benchmark_set = get_object_or_404(BenchmarkSet, pk=pk, imported_from="")
    table = reports.realised_distribution(benchmark_set)
    if query_choice(request.GET, "format", ["csv"]) == "csv":
        return download_response(
            request,
            report_csv(table),
            filename=f"distribution-report-set-{pk}.csv",
            content_type="text/csv; charset=utf-8",
            kind="table",
            target=benchmark_set,
        )
    return render(
        request,
        "benchmark/set_report.html",
        {
            "set": benchmark_set,
            "sections": reports.report_sections(table),
        },
    )


@role_required(*STAFF)
def entry_detail(request: HttpRequest, pk: int) -> HttpResponse:
    entry = get_object_or_404(BenchmarkEntry.objects.select_related("benchmark_set"), pk=pk)
    return render(
        request,
        "benchmark/entry_detail.html",
        {
            "entry": entry,
            "sandbox": sandbox_preview.entry_sandbox_preview(entry),
        },
    )


# --- agents --------------------------------------------------------------------------------


@role_required(*STAFF)
def agents(request: HttpRequest) -> HttpResponse:
    agent_services.agent_configs_ensure_shipped()
    form = forms.AgentConfigForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        config = form.save_config()
        if config:
            messages.success(request, f"Saved agent configuration {config.name}.")
            return redirect("benchmark:agents")
    return render(
        request,
        "benchmark/agents.html",
        {
            "configs": AgentConfig.objects.all(),
            "form": form,
        },
    )


# What a planned run carries over to the launch form from its link.
PLANNED_FIELDS = ("benchmark_set", "repetitions")


# --- runs ----------------------------------------------------------------------------------


@role_required(*STAFF)
def run_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "benchmark/runs.html",
        {
            "runs": Run.objects.select_related("benchmark_set").prefetch_related("agents"),
        },
    )


@role_required(*ADMIN_ONLY)
def run_new(request: HttpRequest) -> HttpResponse:
    agent_services.agent_configs_ensure_shipped()
    # A plan (jury's "plan a run") links here with the set and the repetitions it chose.
    planned = {
        name: request.GET[name] for name in PLANNED_FIELDS if request.GET.get(name, "").isdigit()
    }
    form = forms.RunForm(request.POST or None, initial=planned)
    if request.method == "POST" and form.is_valid():
        try:
            run = runs.run_launch(user=request.user, **form.launch_arguments())
        except runs.RunError as error:
            form.add_error(None, str(error))
        else:
            job_start(run)
            messages.success(request, f"Launched {run.name}.")
            if held := held_work_message("the run"):
                messages.error(request, held)
            for model in form.unpriced():
                messages.warning(request, forms.unpriced_warning(model))
            if short := forms.short_reliability_warning(run.repetitions):
                messages.info(request, short)
            return redirect("benchmark:run", run.pk)
    return render(request, "benchmark/run_form.html", {"form": form})


@role_required(*ADMIN_ONLY)
def run_forecast(request: HttpRequest) -> HttpResponse:
    """The launch page's forecast panel for the form's current values (htmx, on change)."""
    form = forms.RunForm(request.GET)
    form.is_valid()
    arguments = form.forecast_arguments()
    if arguments is None:
        context = {"waiting": "Choose a set, models and configurations to see the forecast."}
    else:
        context = forecast_page_context(forecasts.run_forecast(**arguments))
    return render(request, "benchmark/_forecast.html", context)


@role_required(*STAFF)
def run_import(request: HttpRequest) -> HttpResponse:
    """Conversations played elsewhere (or exported from here) become an imported run."""
    form = forms.ConversationImportForm(request.POST or None, request.FILES or None)
    if request.method != "POST" or not form.is_valid():
        return render(request, "benchmark/run_import.html", {"form": form})
    upload = form.cleaned_data["file"]
    try:
        imported = imports.conversations_file_import(
            name=form.cleaned_data["name"],
            filename=upload.name,
            data=upload.read(),
            user=request.user,
        )
    except imports.ImportRefused as refused:
        context = {"form": form, "filename": upload.name, "problems": refused.problems}
        return render(request, "benchmark/run_import.html", context, status=400)
    count = len(imported.conversations)
    messages.success(request, f"Imported {count} conversations as the run {imported.run.name}.")
    return redirect("benchmark:run", imported.run.pk)


@role_required(*STAFF)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("benchmark_set"), pk=pk)
    conversations = reports.filtered_conversations(run, request.GET)
    page = query_page(request.GET, Paginator(conversations, 50))
    context = {
        "run": run,
        "progress": runs.run_progress(run),
        "costs": cost_by_purpose(run.model_calls.all()),
        "caching": caching_summary(run.model_calls.all()),
        "page": page,
        "query": reports.query_without_page(request),
        "agents": run.agents.all(),
    }
    # The poll redraws the conversations as shown now: same filters, same page.
    context["live"] = live_jobs.live_region(
        request, "run-progress", polling=context["progress"]["live"], keep={"page": page.number}
    )
    return live_jobs.live_page(request, "benchmark/run_detail.html", context, region="run-live")


@role_required(*ADMIN_ONLY)
@require_POST
def run_control(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    if action not in RUN_ACTION_DONE:
        raise Http404(f"No run action {action!r}.")
    run = get_object_or_404(Run, pk=pk)
    try:
        run_control_apply(
            run,
            action,
            actor=request.user,
            retry_failed=bool(request.POST.get("retry_failed")),
            cost_limit_usd=forms.optional_decimal(request.POST.get("cost_limit")),
        )
    except (runs.RunError, ValueError) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, RUN_ACTION_DONE[action])
        if action == "resume" and (held := held_work_message("the run")):
            messages.error(request, held)
    return redirect("benchmark:run", pk)


@role_required(*STAFF)
def run_export(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    return download_response(
        request,
        exports.run_jsonl(run),
        filename=f"run-{run.pk}-conversations.jsonl",
        content_type="application/x-ndjson",
        kind="conversations",
        target=run,
    )


@role_required(*STAFF)
def run_export_parquet(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    return download_response(
        request,
        exports.run_parquet(run),
        filename=f"run-{run.pk}-conversations.parquet",
        content_type=PARQUET,
        kind="conversations",
        target=run,
    )


@role_required(*STAFF)
def run_manifest(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("benchmark_set__distribution"), pk=pk)
    return download_response(
        request,
        manifests.run_manifest_text(run),
        filename=manifests.manifest_file_name(run),
        content_type="application/json",
        kind="manifest",
        target=run,
    )


@role_required(*STAFF)
def conversation_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    conversation = get_object_or_404(
        Conversation.objects.select_related("run", "run_agent", "entry"), public_id=public_id
    )
    # Apps above the benchmark mark events (the fidelity reviewer's findings on the patient).
    marks = trace_marks(conversation)
    events = list(conversation.events.all())
    for event in events:
        event.marks = marks.get(event.event_id, [])
    return render(
        request,
        "benchmark/conversation_detail.html",
        {
            "conversation": conversation,
            "events": events,
            "sandbox_diff": sandbox_preview.sandbox_changes(conversation),
            "costs": cost_by_purpose(conversation.model_calls.all()),
            "seeds": seeds_by_purpose(conversation.model_calls.all()),
            "retries": row_retries(conversation),
            "holder": holder_of(conversation),
            "cost_total": cost_summary(conversation.model_calls.all()),
        },
    )


# --- named model endpoints -----------------------------------------------------------------


@role_required(*ADMIN_ONLY)
def endpoints_page(request: HttpRequest) -> HttpResponse:
    form = forms.EndpointListForm(
        request.POST or None, initial={"yaml_text": endpoint_services.endpoints_text()}
    )
    if request.method == "POST" and form.is_valid():
        endpoint_services.endpoint_list_save(user=request.user, **form.cleaned_data)
        messages.success(request, "Saved the endpoint list; it is in force for new calls.")
        return redirect("benchmark:endpoints")
    context = {
        "form": form,
        "rows": endpoint_services.endpoint_rows(os.environ),
        "history": endpoint_services.endpoint_history(),
    }
    return render(request, "benchmark/endpoints.html", context)


# --- prices --------------------------------------------------------------------------------


@role_required(*STAFF)
def prices_page(request: HttpRequest) -> HttpResponse:
    form = forms.PriceForm(request.POST or None, initial={"model": request.GET.get("model", "")})
    if request.method == "POST" and form.is_valid():
        try:
            row = prices.price_set(user=request.user, **form.cleaned_data)
        except prices.PriceError as error:
            form.add_error(None, str(error))
        else:
            figures = [
                "the input price" if amount is None else f"${amount.normalize():f}"
                for amount in (
                    row.input_per_million,
                    row.output_per_million,
                    row.cached_input_per_million,
                    row.cache_write_per_million,
                )
            ]
            messages.success(
                request,
                f"{row.model} now costs {figures[0]} in and {figures[1]} out per million "
                f"tokens (cached input {figures[2]}, cache writes {figures[3]}), from its next "
                "call on.",
            )
            return redirect("benchmark:prices")
    context = {
        "form": form,
        "file_prices": prices.file_prices(),
        "current": prices.current_prices(),
        "history": prices.price_history(),
    }
    return render(request, "benchmark/prices.html", context)
