"""Alignment report pages (staff only), under /alignment/."""

from django.urls import path

from alignment.views import reports as views

urlpatterns = [
    path("", views.index, name="index"),
    path("studies/<int:pk>/", views.report, name="report"),
    path("studies/<int:pk>/planner/", views.planner, name="planner"),
    path("studies/<int:pk>/agreement.<str:fmt>", views.export, name="export"),
    path("studies/<int:pk>/tables/<slug:table>.<str:fmt>", views.table_export, name="table_export"),
    path("studies/<int:pk>/drift/", views.drift_page, name="drift"),
    path("studies/<int:pk>/drift.<str:fmt>", views.drift_export, name="drift_export"),
    path("studies/<int:pk>/rubrics/<slug:rubric_id>/", views.rubric, name="rubric"),
    path(
        "studies/<int:pk>/rubrics/<slug:rubric_id>/<str:kind>.<str:fmt>",
        views.figure,
        name="figure",
    ),
    path("studies/<int:pk>/disagreements/", views.disagreement_report, name="disagreements"),
    path("studies/<int:pk>/items/<int:item_pk>/themes/", views.tag, name="tag"),
    path("tags/<int:pk>/delete/", views.untag, name="untag"),
    path("projects/<int:pk>/trend/", views.trend_page, name="trend"),
    path("projects/<int:pk>/trend-<str:kind>.<str:fmt>", views.trend_figure, name="trend_figure"),
]
