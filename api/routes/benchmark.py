"""Case sets, runs and conversations: the benchmark pages' actions and read-outs as JSON."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from ninja.pagination import paginate

from api.auth import admins
from api.filters import CaseSetFilters, ConversationFilters, RunFilters, known_query
from api.forms import form_checked, form_refused
from api.jobs import held
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.schemas import (
    CaseSetDetailOut,
    CaseSetIn,
    CaseSetOut,
    ConversationOut,
    ForecastOut,
    PilotOut,
    RunDetailOut,
    RunImportOut,
    RunIn,
    RunLaunchOut,
    RunOut,
    RunResumeIn,
)
from api.schemas_trace import ConversationTraceOut
from audit.downloads import download_response
from benchmark import forms
from benchmark.engine.parquet_export import CONTENT_TYPE as PARQUET
from benchmark.models import BenchmarkSet, Conversation, Run
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
)
from benchmark.services.run_control import RUN_ACTIONS
from benchmark.services.run_control import run_control as run_control_apply
from jobs.services.starts import job_start
from llm.engine.forecast import as_dict

router = Router(tags=["benchmark"])


def case_set_out(benchmark_set: BenchmarkSet, progress: dict) -> dict:
    return {
        "id": benchmark_set.pk,
        "name": benchmark_set.name,
        "status": benchmark_set.status,
        "distribution": benchmark_set.distribution_id,
        "imported_from": benchmark_set.imported_from,
        "size": benchmark_set.size,
        "sampler_seed": benchmark_set.sampler_seed,
        "generator_model": benchmark_set.generator_model,
        "cost_limit_usd": benchmark_set.cost_limit_usd,
        "created_at": benchmark_set.created_at,
        "progress": progress,
        "batch": benchmark_set.batch,
    }


def case_sets_out(benchmark_sets: list[BenchmarkSet]) -> list[dict]:
    counts = cases.benchmark_sets_counts(benchmark_sets)
    return [case_set_out(each, counts[each.pk]) for each in benchmark_sets]


def case_set_detail_out(benchmark_set: BenchmarkSet) -> dict:
    batches = case_batches.batch_progress(benchmark_set) if benchmark_set.batch else []
    return case_set_out(benchmark_set, benchmark_set.progress()) | {"batches": batches}


def run_out(run: Run, progress: dict) -> dict:
    return {
        "id": run.pk,
        "name": run.name,
        "status": run.status,
        "benchmark_set": run.benchmark_set_id,
        "agents": [
            {"id": agent.pk, "label": agent.label, "model": agent.model}
            for agent in run.agents.all()
        ],
        "patient_model": run.patient_model,
        "roster_model": run.roster_model,
        "repetitions": run.repetitions,
        "concurrency": run.concurrency,
        "max_turns": run.max_turns,
        "seed": run.seed,
        "cost_limit_usd": run.cost_limit_usd,
        "progress": progress,
    }


def runs_out(page: list[Run]) -> list[dict]:
    counts = runs.runs_counts(page)
    return [run_out(run, counts[run.pk]) for run in page]


def run_detail_out(run: Run) -> dict:
    return run_out(run, runs.run_progress(run))


def conversations_out(page: list[Conversation]) -> list[dict]:
    return [conversation_out(conversation) for conversation in page]


def conversation_out(conversation: Conversation) -> dict:
    return {
        "id": str(conversation.public_id),
        "run": conversation.run_id,
        "agent": conversation.run_agent.label,
        "model": conversation.run_agent.model,
        "case": conversation.entry.index,
        "repetition": conversation.repetition,
        "status": conversation.status,
        "termination_reason": conversation.termination_reason,
        "assistant_turns": conversation.assistant_turns,
        "cost_usd": conversation.cost_usd,
        "finished_at": conversation.finished_at,
    }


# --- case sets -------------------------------------------------------------------------------


@router.post(
    "/case-sets", response=responses({201: CaseSetDetailOut}, 400), url_name="case_set_create"
)
def case_set_create(request: HttpRequest, payload: CaseSetIn):
    """Sample a case set from a distribution; its entries are enriched in the background."""
    fields = payload.dict()
    fields["distribution"] = fields["distribution"] or cases.distribution_default_ensure().pk
    form = form_checked(forms.BenchmarkSetForm, fields)
    try:
        benchmark_set = cases.benchmark_set_create(user=request.user, **form.cleaned_data)
    except cases.BenchmarkSetError as error:
        raise Refused(str(error)) from None
    job_start(benchmark_set)
    return Status(201, case_set_detail_out(benchmark_set) | {"warning": held("the benchmark set")})


@router.get("/case-sets", response=responses({200: list[CaseSetOut]}, 400), url_name="case_sets")
@paginate(RowsCursorPagination, out=case_sets_out)
@known_query(CaseSetFilters)
def case_set_list(request: HttpRequest, filters: Query[CaseSetFilters]):
    """Case sets, oldest first; `status` keeps one status."""
    sets = BenchmarkSet.objects.all()
    return sets.filter(status=filters.status) if filters.status else sets


@router.get(
    "/case-sets/{set_id}", response=responses({200: CaseSetDetailOut}, 404), url_name="case_set"
)
def case_set_detail(request: HttpRequest, set_id: int):
    return case_set_detail_out(get_object_or_404(BenchmarkSet, pk=set_id))


# --- runs ------------------------------------------------------------------------------------


@router.post(
    "/runs",
    response=responses({201: RunLaunchOut, 200: ForecastOut, 202: PilotOut}, 400),
    url_name="run_launch",
    auth=admins(),
)
def run_launch(request: HttpRequest, payload: RunIn):
    """Launch a run with the checks of the launch page (admins only, as there); with
    dry_run, answer its forecast and create nothing; with dry_run and pilot N, when the set
    has no finished run, launch an offline pilot of N cases to forecast from (202)."""
    if payload.pilot is not None and not payload.dry_run:
        raise Refused("pilot goes with dry_run: it plays a pilot to forecast from.")
    agent_services.agent_configs_ensure_shipped()
    form = form_checked(forms.RunForm, payload.dict(exclude={"dry_run", "pilot"}))
    if payload.dry_run:
        arguments = form.forecast_arguments()
        if payload.pilot is not None and forecasts.pilot_needed(arguments["benchmark_set"]):
            return Status(202, _pilot_started(arguments, payload.pilot))
        return Status(200, as_dict(forecasts.run_forecast(**arguments)))
    try:
        run = runs.run_launch(user=request.user, **form.launch_arguments())
    except runs.RunError as error:
        raise Refused(str(error)) from None
    job_start(run)
    warnings = [forms.unpriced_warning(model) for model in form.unpriced()]
    return Status(201, run_detail_out(run) | {"warning": held("the run"), "unpriced": warnings})


def _pilot_started(arguments: dict, conversations: int) -> dict:
    """The set's pilot, launched into the workers unless one is playing already (asking
    again before it finished launches no second pilot)."""
    benchmark_set = arguments["benchmark_set"]
    pilot = forecasts.pilot_playing(benchmark_set)
    if pilot is None:
        try:
            pilot = forecasts.pilot_launch(
                benchmark_set=benchmark_set,
                agents=arguments["agents"],
                conversations=conversations,
            )
        except runs.RunError as error:
            raise Refused(str(error)) from None
        job_start(pilot)
    total = pilot.conversations.count()
    return {
        "pilot_run": pilot.pk,
        "conversations": total,
        "detail": f"No finished run of {benchmark_set.name!r} to forecast from: pilot run "
        f"{pilot.pk} plays {total} conversations with the offline scripts (free). Ask again "
        f"with dry_run once it finished (GET /runs/{pilot.pk} shows its progress).",
    }


@router.get("/runs", response=responses({200: list[RunOut]}, 400), url_name="runs")
@paginate(RowsCursorPagination, out=runs_out)
@known_query(RunFilters)
def run_list(request: HttpRequest, filters: Query[RunFilters]):
    """Runs, oldest first, each with its conversations' counts (`GET /runs/{id}` adds tokens,
    cost and terminations); `status` and `benchmark_set` narrow the list."""
    found = Run.objects.prefetch_related("agents")
    if filters.status:
        found = found.filter(status=filters.status)
    if filters.benchmark_set is not None:
        found = found.filter(benchmark_set_id=filters.benchmark_set)
    return found


@router.get("/runs/{run_id}", response=responses({200: RunDetailOut}, 404), url_name="run")
def run_detail(request: HttpRequest, run_id: int):
    return run_detail_out(get_object_or_404(Run, pk=run_id))


# --- conversations ---------------------------------------------------------------------------


@router.get(
    "/runs/{run_id}/conversations",
    response=responses({200: list[ConversationOut]}, 400, 404),
    url_name="conversations",
)
@paginate(RowsCursorPagination, out=conversations_out)
@known_query(ConversationFilters)
def conversation_list(request: HttpRequest, run_id: int, filters: Query[ConversationFilters]):
    """Filters as on the run page: `status`, `termination_reason`, `agent` (a run agent id)."""
    run = get_object_or_404(Run, pk=run_id)
    return reports.filtered_conversations(run, request.GET)


@router.get(
    "/runs/{run_id}/conversations.{fmt}",
    response=responses({200: None}, 404),
    url_name="run_export",
)
def run_export(request: HttpRequest, run_id: int, fmt: str):
    """Every conversation of the run with its trace: JSONL (the run page's export) or Parquet
    (one row per conversation, nested parts as JSON text), streamed."""
    run = get_object_or_404(Run, pk=run_id)
    exports_by_format = {
        "jsonl": (exports.run_jsonl, "application/x-ndjson"),
        "parquet": (exports.run_parquet, PARQUET),
    }
    if fmt not in exports_by_format:
        raise HttpError(404, "Export formats: jsonl, parquet.")
    export, content_type = exports_by_format[fmt]
    return download_response(
        request,
        export(run),
        filename=f"run-{run.pk}-conversations.{fmt}",
        content_type=content_type,
        kind="conversations",
        target=run,
    )


@router.get(
    "/runs/{run_id}/manifest.json", response=responses({200: None}, 404), url_name="run_manifest"
)
def run_manifest(request: HttpRequest, run_id: int):
    """The run's manifest (the run page's "Manifest (JSON)"): data file hashes, models and
    settings, seeds, package versions, commit; `run_benchmark --replay` takes it."""
    run = get_object_or_404(Run.objects.select_related("benchmark_set__distribution"), pk=run_id)
    return download_response(
        request,
        manifests.run_manifest_text(run),
        filename=manifests.manifest_file_name(run),
        content_type="application/json",
        kind="manifest",
        target=run,
    )


@router.post(
    "/runs/{run_id}/{action}",
    response=responses({200: RunDetailOut}, 400, 404),
    url_name="run_control",
    auth=admins(),
)
def run_control(request: HttpRequest, run_id: int, action: str, payload: RunResumeIn | None = None):
    """Pause, cancel or resume (optionally retrying failed conversations, with a new limit)."""
    if action not in RUN_ACTIONS:
        raise HttpError(404, f"No run action {action!r}; use one of {', '.join(RUN_ACTIONS)}.")
    run = get_object_or_404(Run, pk=run_id)
    payload = payload or RunResumeIn()
    limit = payload.cost_limit_usd
    try:
        run_control_apply(
            run,
            action,
            actor=request.user,
            retry_failed=payload.retry_failed,
            cost_limit_usd=forms.optional_decimal(None if limit is None else str(limit)),
        )
    except (runs.RunError, ValueError) as error:
        raise Refused(str(error)) from None
    run.refresh_from_db()
    return run_detail_out(run)


@router.post(
    "/imports", response=responses({201: RunImportOut}, 400), url_name="conversation_import"
)
def conversation_import(request: HttpRequest, file: File[UploadedFile], name: Form[str] = ""):
    """Your own conversations (JSON Lines, multipart field `file`: OpenAI chat format or this
    site's run export) as an imported run. Every line is checked first: 400 lists each
    problem with its line (the problem's `errors`) and nothing is saved."""
    form = forms.ConversationImportForm(data={"name": name}, files={"file": file})
    if not form.is_valid():
        raise form_refused(form, location="form")
    try:
        imported = imports.conversations_file_import(
            name=name, filename=file.name, data=file.read(), user=request.user
        )
    except imports.ImportRefused as refused:
        detail = f"{file.name}: {len(refused.problems)} problem(s); nothing was saved."
        errors = [{"location": "file", "message": problem} for problem in refused.problems]
        raise Refused(detail, errors) from None
    imported_run = run_detail_out(imported.run)
    return Status(201, imported_run | {"conversations": len(imported.conversations)})


@router.get(
    "/conversations/{public_id}",
    response=responses({200: ConversationTraceOut}, 404),
    url_name="conversation",
)
def conversation_trace(request: HttpRequest, public_id: uuid.UUID):
    """One conversation with its trace, as one line of the run's JSONL export."""
    conversation = get_object_or_404(
        Conversation.objects.select_related("run", "run_agent__agent_config", "entry"),
        public_id=public_id,
    )
    return exports.conversation_record(conversation, exports.conversation_events(conversation))
