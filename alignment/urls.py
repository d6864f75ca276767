"""Every alignment page under /alignment/: the reports and the re-scoring loop."""

from alignment import urls_loop, urls_reports

app_name = "alignment"
urlpatterns = [*urls_reports.urlpatterns, *urls_loop.urlpatterns]
