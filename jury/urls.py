from django.urls import path

from jury import views

app_name = "jury"
urlpatterns = [
    path("rubrics/", views.rubric_list, name="rubrics"),
    path("rubrics/<int:pk>/", views.rubric_detail, name="rubric"),
    path("rubrics/<int:pk>/new-version/", views.rubric_new_version, name="rubric_new_version"),
    path("juries/", views.jury_list, name="juries"),
    path("juries/<int:pk>/", views.jury_detail, name="jury"),
    path("runs/<int:run_id>/score/", views.score_run, name="score_run"),
    path("runs/<int:run_id>/score/forecast/", views.score_forecast, name="score_forecast"),
    path("jobs/<int:pk>/", views.job_detail, name="job"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job_retry"),
    path("jobs/<int:pk>/resume/", views.job_resume, name="job_resume"),
    path("jobs/<int:pk>/scores.<str:fmt>", views.job_scores_export, name="job_scores_export"),
    path("reports/", views.report_list, name="reports"),
    path("leaderboard/", views.leaderboard_page, name="leaderboard"),
    path("plan/", views.plan, name="plan"),
    path("jobs/<int:pk>/report/", views.report, name="report"),
    path(
        "jobs/<int:pk>/report/<str:table>.<str:suffix>", views.report_export, name="report_export"
    ),
    path(
        "jobs/<int:pk>/report/figures/<slug:kind>.<str:fmt>",
        views.report_figure_download,
        name="report_figure",
    ),
    path("jobs/<int:pk>/sensitivity/", views.sensitivity, name="sensitivity"),
    path(
        "jobs/<int:pk>/sensitivity/<slug:attribute>.<str:fmt>",
        views.sensitivity_figure_download,
        name="sensitivity_figure",
    ),
    path("jobs/<int:pk>/comparison/", views.comparison, name="comparison"),
    path("jobs/<int:pk>/judges/", views.judges, name="judges"),
    path("jobs/<int:pk>/failures/", views.failures, name="failures"),
]
