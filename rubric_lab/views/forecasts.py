"""The forecast panels of the lab's evaluation launch forms (htmx, refreshed as the form
changes): what the launch would call and spend per stage, from a dry launch that keeps nothing
(rubric_lab.services.study_forecasts). Staff only."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from accounts.access import STAFF, role_required
from llm.engine.forecast import Forecast
from llm.engine.forecast import page_context as forecast_page_context
from rubric_lab.forms import evaluation as forms
from rubric_lab.forms.generation import InstanceScoreForm
from rubric_lab.models import InstanceRubric
from rubric_lab.services import ablations, coverage, instance_scoring, refine, sensitivity
from rubric_lab.services import study_forecasts as forecasts

PANEL = "benchmark/_forecast.html"
# What one unit of each launch is, for the panel's note.
UNITS = {
    "sensitivity": "near-miss pairs (reference x perturbation type)",
    "coverage": "coverage cases (one rubric each)",
    "refine": "refinements (rubric x arm)",
    "ablation": "conversations for generation, pairs for sensitivity, cases for coverage",
    "score": "the rubric's criteria (one decision each)",
}


def _panel(request: HttpRequest, kind: str, form, forecast_of: Callable[[dict], Forecast], refusal):
    """The panel for what the form says now: what is missing, the launch's refusal, or the
    forecast."""
    if not form.is_valid():
        wanted = ", ".join(
            str(form[name].label or name).lower() for name in form.errors if name in form.fields
        )
        problem = f"Complete the form ({wanted})" if wanted else "Correct the form"
        return render(request, PANEL, {"waiting": f"{problem} to see the forecast."})
    try:
        result = forecast_of(form.cleaned_data)
    except refusal as error:
        return render(request, PANEL, {"waiting": f"No forecast: {error}"})
    return render(request, PANEL, {**forecast_page_context(result), "units_note": UNITS[kind]})


def _dry(launch: Callable[..., object], request: HttpRequest) -> Callable[[dict], Forecast]:
    return lambda data: forecasts.launch_forecast(lambda: launch(user=request.user, **data))


@role_required(*STAFF)
def sensitivity_forecast(request: HttpRequest) -> HttpResponse:
    form = forms.SensitivityLaunchForm(request.GET)
    return _panel(
        request,
        "sensitivity",
        form,
        _dry(sensitivity.study_launch, request),
        sensitivity.StudyError,
    )


@role_required(*STAFF)
def coverage_forecast(request: HttpRequest) -> HttpResponse:
    form = forms.CoverageLaunchForm(request.GET)
    return _panel(
        request, "coverage", form, _dry(coverage.coverage_launch, request), coverage.CoverageError
    )


@role_required(*STAFF)
def refine_forecast(request: HttpRequest) -> HttpResponse:
    form = forms.RefineLaunchForm(request.GET)
    return _panel(request, "refine", form, _dry(refine.refine_launch, request), refine.RefineError)


@role_required(*STAFF)
def ablation_forecast(request: HttpRequest) -> HttpResponse:
    form = forms.AblationLaunchForm(request.GET)
    launch = _dry(ablations.ablation_launch, request)
    return _panel(request, "ablation", form, launch, ablations.AblationError)


@role_required(*STAFF)
def rubric_score_forecast(request: HttpRequest, pk: int) -> HttpResponse:
    rubric = get_object_or_404(InstanceRubric, pk=pk)
    conversations = instance_scoring.same_case_conversations(rubric)
    form = InstanceScoreForm(request.GET, conversations=conversations)

    def forecast_of(data: dict) -> Forecast:
        return forecasts.score_forecast(
            rubric=rubric, conversation=data["conversation"], judge_model=data["judge_model"]
        )

    return _panel(request, "score", form, forecast_of, instance_scoring.InstanceScoringError)
