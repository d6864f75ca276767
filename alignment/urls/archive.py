"""The study archive (staff only): export from a study, the job page, the download, the
import upload."""

from django.urls import path

from alignment.views import archive as views

urlpatterns = [
    path("studies/<int:pk>/archive/", views.study_archive, name="study_archive"),
    path("archives/import/", views.archive_import, name="archive_import"),
    path("archives/<int:pk>/", views.archive_job, name="archive_job"),
    path("archives/<int:pk>/download/", views.archive_download, name="archive_download"),
]
