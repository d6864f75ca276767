"""Closing the loop: re-scoring a study and comparing the juries scored on it (alignment.urls
includes these under the app's namespace)."""

from django.urls import path

from alignment import views_loop

urlpatterns = [
    path("studies/<int:pk>/loop/rescore/", views_loop.rescore, name="loop_rescore"),
    path("studies/<int:pk>/loop/juries/", views_loop.comparison, name="loop_comparison"),
    path("studies/<int:pk>/loop/juries.csv", views_loop.comparison_csv, name="loop_comparison_csv"),
]
