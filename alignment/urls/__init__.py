"""Every alignment page under /alignment/, by area: the reports, re-scoring a study and
comparing juries, calibrating the jury to a study's clinicians, the study archive, the static
report bundle."""

from alignment.urls import archive, bundle, calibration, reports, rescoring

app_name = "alignment"
urlpatterns = [
    *reports.urlpatterns,
    *rescoring.urlpatterns,
    *calibration.urlpatterns,
    *archive.urlpatterns,
    *bundle.urlpatterns,
]
