from django.urls import path

from benchmark import views

app_name = "benchmark"
urlpatterns: list = []
