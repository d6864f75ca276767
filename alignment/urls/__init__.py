"""Every alignment page under /alignment/, by area: the reports, re-scoring a study and
comparing juries, the study archive."""

from alignment.urls import archive, reports, rescoring

app_name = "alignment"
urlpatterns = [*reports.urlpatterns, *rescoring.urlpatterns, *archive.urlpatterns]
