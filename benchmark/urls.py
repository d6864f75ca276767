from django.urls import path

from benchmark import views

app_name = "benchmark"
urlpatterns = [
    path("distributions/", views.distributions, name="distributions"),
    path("distributions/new/", views.distribution_new, name="distribution_new"),
    path("distributions/<int:pk>/", views.distribution_detail, name="distribution"),
    path("sets/", views.sets, name="sets"),
    path("sets/new/", views.set_new, name="set_new"),
    path("sets/<int:pk>/", views.set_detail, name="set"),
    path("sets/<int:pk>/retry/", views.set_retry, name="set_retry"),
    path("sets/<int:pk>/resume/", views.set_resume, name="set_resume"),
    path("sets/<int:pk>/report/", views.set_report, name="set_report"),
    path("entries/<int:pk>/", views.entry_detail, name="entry"),
    path("agents/", views.agents, name="agents"),
    path("runs/", views.run_list, name="runs"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/forecast/", views.run_forecast, name="run_forecast"),
    path("runs/import/", views.run_import, name="run_import"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/export.jsonl", views.run_export, name="run_export"),
    path("runs/<int:pk>/export.parquet", views.run_export_parquet, name="run_export_parquet"),
    path("runs/<int:pk>/manifest.json", views.run_manifest, name="run_manifest"),
    path("runs/<int:pk>/<str:action>/", views.run_control, name="run_control"),
    path("conversations/<uuid:public_id>/", views.conversation_detail, name="conversation"),
    path("prices/", views.prices_page, name="prices"),
    path("endpoints/", views.endpoints_page, name="endpoints"),
]
