"""A study's calibration page and its actions (alignment.urls includes these under the app's
namespace)."""

from django.urls import path

from alignment.views import calibration as views

urlpatterns = [
    path("studies/<int:pk>/calibration/", views.calibration_page, name="calibration"),
    path(
        "studies/<int:pk>/calibration/examples/",
        views.examples_launch,
        name="calibration_examples",
    ),
    path("studies/<int:pk>/calibration/promote/", views.promote, name="calibration_promote"),
    path(
        "studies/<int:pk>/calibration/rescore/",
        views.promoted_rescore,
        name="calibration_rescore",
    ),
]
