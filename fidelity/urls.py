from django.urls import path

from fidelity import views

app_name = "fidelity"
urlpatterns = [
    path("runs/<int:run_id>/review/", views.review_new, name="review_new"),
    path("reviews/<int:pk>/", views.review_detail, name="review"),
    path("reviews/<int:pk>/retry/", views.review_retry, name="review_retry"),
    path("reviews/<int:pk>/resume/", views.review_resume, name="review_resume"),
    path("reviews/<int:pk>/replay/", views.review_replay, name="review_replay"),
]
