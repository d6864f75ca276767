"""Re-scoring a study and comparing the juries scored on it (alignment.urls
includes these under the app's namespace)."""

from django.urls import path

from alignment.views import rescoring as views

urlpatterns = [
    path("studies/<int:pk>/loop/rescore/", views.rescore, name="loop_rescore"),
    path("studies/<int:pk>/loop/juries/", views.comparison, name="loop_comparison"),
    path("studies/<int:pk>/loop/juries.csv", views.comparison_csv, name="loop_comparison_csv"),
    path("studies/<int:pk>/jury-history/", views.history, name="jury_history"),
    path(
        "studies/<int:pk>/jury-history.<str:fmt>", views.history_export, name="jury_history_export"
    ),
]
