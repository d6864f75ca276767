from django.urls import path

from rubric_lab.views import evaluation as views_evaluation
from rubric_lab.views import forecasts as views_forecasts
from rubric_lab.views import generation as views

app_name = "rubric_lab"

urlpatterns = [
    path("knowledge/", views.knowledge_base, name="kb"),
    path("knowledge/upload/", views.knowledge_upload, name="kb_upload"),
    path("import/", views.import_healthbench, name="import"),
    path("pipelines/", views.pipeline_list, name="pipelines"),
    path("pipelines/new/", views.pipeline_new, name="pipeline_new"),
    path("pipelines/new/forecast/", views.pipeline_forecast, name="pipeline_forecast"),
    path("pipelines/<int:pk>/", views.pipeline_detail, name="pipeline"),
    path("generations/<int:pk>/", views.generation_detail, name="generation"),
    path("rubrics/<int:pk>/", views.rubric_detail, name="rubric"),
    path("rubrics/<int:pk>/score/", views.rubric_score, name="rubric_score"),
    path("scores/<int:pk>/", views.score_detail, name="score"),
]

# Evaluation side: near misses, sensitivity, coverage, critique-then-refine, ablations.
urlpatterns += [
    path("sensitivity/", views_evaluation.sensitivity_list, name="sensitivity_list"),
    path("sensitivity/<int:pk>/", views_evaluation.sensitivity_detail, name="sensitivity"),
    path(
        "sensitivity/<int:pk>/retry/", views_evaluation.sensitivity_retry, name="sensitivity_retry"
    ),
    path(
        "sensitivity/<int:pk>/export.<str:suffix>",
        views_evaluation.sensitivity_export,
        name="sensitivity_export",
    ),
    path("near-misses/<int:pk>/", views_evaluation.near_miss_detail, name="near_miss"),
    path(
        "conversations/<uuid:public_id>/near-misses/",
        views_evaluation.perturbation_preview_page,
        name="perturbation_preview",
    ),
    path("coverage/", views_evaluation.coverage_list, name="coverage_list"),
    path("coverage/<int:pk>/", views_evaluation.coverage_detail, name="coverage"),
    path(
        "coverage/<int:pk>/export.<str:suffix>",
        views_evaluation.coverage_export,
        name="coverage_export",
    ),
    path(
        "coverage/<int:pk>/compare/<int:other>/export.<str:suffix>",
        views_evaluation.coverage_compare_export,
        name="coverage_compare_export",
    ),
    path("refine/", views_evaluation.refine_list, name="refine_list"),
    path("refine/<int:pk>/", views_evaluation.refine_detail, name="refine"),
    path(
        "refine/<int:pk>/export.<str:suffix>", views_evaluation.refine_export, name="refine_export"
    ),
    path("ablations/", views_evaluation.ablation_list, name="ablation_list"),
    path("ablations/<int:pk>/", views_evaluation.ablation_detail, name="ablation"),
    # Any lab job paused at its cost limit: kind is pipeline, sensitivity, coverage, refine
    # or ablation.
    path("jobs/<str:kind>/<int:pk>/resume/", views_evaluation.job_resume, name="job_resume"),
]

# The evaluation launch forms' forecast panels (htmx, as the form changes).
urlpatterns += [
    path(
        "sensitivity/forecast/", views_forecasts.sensitivity_forecast, name="sensitivity_forecast"
    ),
    path("coverage/forecast/", views_forecasts.coverage_forecast, name="coverage_forecast"),
    path("refine/forecast/", views_forecasts.refine_forecast, name="refine_forecast"),
    path("ablations/forecast/", views_forecasts.ablation_forecast, name="ablation_forecast"),
    path(
        "rubrics/<int:pk>/score/forecast/",
        views_forecasts.rubric_score_forecast,
        name="rubric_score_forecast",
    ),
]
