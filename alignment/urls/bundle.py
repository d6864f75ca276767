"""The static report button (staff only): a zip of one or several scoring jobs' reports."""

from django.urls import path

from alignment.views import bundle as views

urlpatterns = [
    path("report-bundle/", views.report_bundle, name="report_bundle"),
]
