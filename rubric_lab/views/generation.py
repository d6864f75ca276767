"""Rubric lab pages, generation side: knowledge base, pipeline launch and progress, the
pipeline read top to bottom, instance rubrics and their scores. Staff only."""

from __future__ import annotations

from django.contrib import messages
from django.forms import UUIDField
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from benchmark.models import Conversation, Run
from common import live_jobs
from common.live_jobs import is_running
from common.query import BadQuery, query_form_check, query_object, query_value
from jobs.services.starts import job_start
from llm.engine.forecast import page_context as forecast_page_context
from llm.engine.providers.client import sends_sampling
from rubric_lab.engine.knowledge import CorpusError
from rubric_lab.engine.pipeline import stages_of
from rubric_lab.forms import generation as forms
from rubric_lab.models import (
    GenerationJob,
    InstanceRubric,
    InstanceScore,
    KnowledgePassage,
    KnowledgeUpload,
    RubricGeneration,
)
from rubric_lab.services import (
    budgets,
    forecasts,
    generation_batches,
    imports,
    instance_scoring,
    knowledge,
    pipeline,
)

SEARCH_RESULTS = 8
LIST_LIMIT = 100
# What the forecast needs of the launch form: the models, the method and its ablations.
FORECAST_OPTIONS = (
    "generator_model",
    "judge_model",
    "method",
    "batch",
    *forecasts.SKIPS.values(),
)
LAUNCH_OPTIONS = (
    "generator_model",
    "judge_model",
    "method",
    "retriever",
    "top_k",
    "skip_routing",
    "skip_intent",
    "skip_facts",
    "skip_audit",
    "audit_rounds",
    "use_cache",
    "cost_limit_usd",
    "batch",
    "batch_resend_live",
)

# --- knowledge base ------------------------------------------------------------------------


@role_required(*STAFF)
def knowledge_base(request: HttpRequest) -> HttpResponse:
    knowledge.knowledge_ensure_shipped()
    search = forms.KnowledgeSearchForm(request.GET or None)
    query_form_check(search)
    hits = []
    if search.is_valid() and search.cleaned_data["q"]:
        hits = knowledge.knowledge_search(
            search.cleaned_data["q"], kind=search.cleaned_data["retriever"], k=SEARCH_RESULTS
        )
    context = {"search": search, "hits": hits, "searched": bool(request.GET.get("q"))}
    if request.htmx:
        return render(request, "rubric_lab/kb.html#kb-results", context)
    return render(
        request,
        "rubric_lab/kb.html",
        {
            **context,
            "upload_form": forms.KnowledgeUploadForm(),
            "passages": KnowledgePassage.objects.all(),
            "uploads": KnowledgeUpload.objects.all()[:20],
        },
    )


@role_required(*STAFF)
@require_POST
def knowledge_upload(request: HttpRequest) -> HttpResponse:
    form = forms.KnowledgeUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("file", ["Choose a file to upload."])))
        return redirect("rubric_lab:kb")
    upload = form.cleaned_data["file"]
    try:
        saved = knowledge.knowledge_upload(
            filename=upload.name, content=upload.read(), user=request.user
        )
    except CorpusError as error:
        return render(
            request,
            "rubric_lab/kb_upload_rejected.html",
            {"filename": upload.name, "problems": error.problems},
            status=400,
        )
    messages.success(request, f"Added {saved.passage_count} passages from {saved.filename}.")
    return redirect("rubric_lab:kb")


# --- importing conversations ----------------------------------------------------------------


@role_required(*STAFF)
def import_healthbench(request: HttpRequest) -> HttpResponse:
    form = forms.HealthBenchImportForm(request.POST or None, request.FILES or None)
    if request.method != "POST" or not form.is_valid():
        return render(request, "rubric_lab/import.html", {"form": form})
    upload = form.cleaned_data["file"]
    try:
        imported = imports.healthbench_import(
            filename=upload.name,
            text=imports.healthbench_text(upload.read(), upload.name),
            name=form.cleaned_data["name"],
            source_subset=form.cleaned_data["source_subset"],
            user=request.user,
        )
    except imports.HealthBenchRefused as refused:
        context = {"form": form, "filename": upload.name, "problems": refused.problems}
        return render(request, "rubric_lab/import.html", context, status=400)
    messages.success(request, imports.import_summary(imported))
    return redirect("benchmark:run", imported.run.pk)


# --- pipeline --------------------------------------------------------------------------------


@role_required(*STAFF)
def pipeline_list(request: HttpRequest) -> HttpResponse:
    rows = pipeline.jobs_with_progress(LIST_LIMIT)
    return render(request, "rubric_lab/pipeline_list.html", {"rows": rows})


@role_required(*STAFF)
def pipeline_new(request: HttpRequest) -> HttpResponse:
    form = forms.PipelineLaunchForm(request.POST or None, initial=_launch_initial(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        options = {name: data[name] for name in LAUNCH_OPTIONS}
        try:
            job = pipeline.generation_job_launch(
                conversations=form.conversations(),
                run=data["run"],
                sampling=form.sampling(),
                user=request.user,
                **options,
            )
        except pipeline.PipelineLaunchError as error:
            form.add_error(None, str(error))
        else:
            job_start(job)
            return redirect("rubric_lab:pipeline", job.pk)
    return render(request, "rubric_lab/pipeline_new.html", {"form": form})


@role_required(*STAFF)
def pipeline_forecast(request: HttpRequest) -> HttpResponse:
    """The launch page's forecast panel for what the form says now (htmx, on change)."""
    form = forms.PipelineLaunchForm(request.GET)
    if not form.is_valid():
        wanted = ", ".join(
            str(form[name].label).lower() for name in form.errors if name in form.fields
        )
        context = {"waiting": f"Complete the form ({wanted}) to see the forecast."}
        return render(request, "benchmark/_forecast.html", context)
    data = form.cleaned_data
    conversations = data["run"].conversations.scorable()
    if data["conversation"]:
        conversations = conversations.filter(public_id=data["conversation"])
    result = forecasts.generation_forecast(
        run=data["run"],
        conversations=min(conversations.count(), data["limit"]),
        **{name: data[name] for name in FORECAST_OPTIONS},
    )
    return render(request, "benchmark/_forecast.html", forecast_page_context(result))


def _launch_initial(request: HttpRequest) -> dict:
    """The run and conversation a link asked to generate rubrics for."""
    run = query_object(request.GET, "run", Run.objects.all())
    conversation = query_value(request.GET, "conversation", UUIDField())
    if conversation and not Conversation.objects.filter(public_id=conversation).exists():
        raise BadQuery("conversation", str(conversation), "there is no such conversation.")
    chosen = {"run": run, "conversation": conversation}
    return {name: value for name, value in chosen.items() if value}


@role_required(*STAFF)
def pipeline_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob.objects.select_related("run"), pk=pk)
    context = {
        "job": job,
        "progress": pipeline.job_progress(job),
        "generations": job.generations.select_related("conversation__entry", "rubric")[:500],
        "cost": pipeline.generation_total_cost(job),
        "model_costs": budgets.job_model_costs(job),
        "live": live_jobs.live_region(request, "job-live", polling=is_running(job.status)),
    }
    if job.batch:
        context |= generation_batches.page_context(job)
    return live_jobs.live_page(
        request, "rubric_lab/pipeline_detail.html", context, region="job-live"
    )


@role_required(*STAFF)
def generation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generation = get_object_or_404(
        RubricGeneration.objects.select_related("job", "conversation__entry"), pk=pk
    )
    stages = list(generation.stages.all())
    for stage in stages:  # where the model's SDK cannot send sampling settings, say so
        stage.sampling_sent = bool(stage.model) and sends_sampling(stage.model)
    done = {stage.name for stage in stages}
    context = {
        "generation": generation,
        "job": generation.job,
        "stages": stages,
        "waiting": [name for name in stages_of(generation.job.method) if name not in done],
        "rubric": InstanceRubric.objects.filter(generation=generation).first(),
    }
    if request.htmx:
        return render(request, "rubric_lab/pipeline_generation.html#generation-live", context)
    return render(request, "rubric_lab/pipeline_generation.html", context)


# --- instance rubrics and their scores ------------------------------------------------------


@role_required(*STAFF)
def rubric_detail(request: HttpRequest, pk: int) -> HttpResponse:
    rubric = get_object_or_404(
        InstanceRubric.objects.select_related("generation__job", "conversation__entry"), pk=pk
    )
    form = forms.InstanceScoreForm(conversations=instance_scoring.same_case_conversations(rubric))
    return render(request, "rubric_lab/rubric_detail.html", _rubric_context(rubric, form))


@role_required(*STAFF)
@require_POST
def rubric_score(request: HttpRequest, pk: int) -> HttpResponse:
    rubric = get_object_or_404(InstanceRubric, pk=pk)
    form = forms.InstanceScoreForm(
        request.POST, conversations=instance_scoring.same_case_conversations(rubric)
    )
    if not form.is_valid():
        context = _rubric_context(rubric, form)
        return render(request, "rubric_lab/rubric_detail.html", context, status=400)
    try:
        score = instance_scoring.instance_score_launch(
            rubric=rubric,
            conversation=form.cleaned_data["conversation"],
            judge_model=form.cleaned_data["judge_model"],
        )
    except instance_scoring.InstanceScoringError as error:
        messages.error(request, str(error))
        return redirect("rubric_lab:rubric", pk)
    job_start(score)
    return redirect("rubric_lab:score", score.pk)


@role_required(*STAFF)
def score_detail(request: HttpRequest, pk: int) -> HttpResponse:
    score = get_object_or_404(
        InstanceScore.objects.select_related("rubric", "conversation__run"), pk=pk
    )
    context = {"score": score, "decisions": score.decisions.select_related("criterion")}
    if request.htmx:
        return render(request, "rubric_lab/rubric_score.html#score-live", context)
    return render(request, "rubric_lab/rubric_score.html", context)


def _rubric_context(rubric: InstanceRubric, form) -> dict:
    facts = {fact["id"]: fact for fact in rubric.facts}
    passages = {passage["passage_id"]: passage for passage in rubric.passages}
    criteria = [
        {
            "row": criterion,
            "facts": [facts[f] for f in criterion.fact_ids if f in facts],
            "passages": [passages[p] for p in criterion.passage_ids if p in passages],
        }
        for criterion in rubric.criteria.all()
    ]
    return {
        "rubric": rubric,
        "criteria": criteria,
        "positive_total": sum(c.weight for c in rubric.criteria.all() if c.weight > 0),
        "scores": rubric.scores.select_related("conversation__run"),
        "form": form,
    }
