from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("", views.hooks, name="hooks"),
    path("<int:pk>/", views.hook, name="hook"),
    path("<int:pk>/test/", views.hook_test, name="hook_test"),
    path("<int:pk>/enable/", views.hook_enable, name="hook_enable"),
    path("<int:pk>/delete/", views.hook_delete, name="hook_delete"),
]
