"""Annotator pages: a study's queue, and the review screen addressed by the assignment's own
opaque public_id (never a conversation, run or study item id)."""

from django.urls import path

from annotation.views import adjudication as views_adjudication
from annotation.views import annotator as views

urlpatterns = [
    path("studies/<int:pk>/queue/", views.queue_page, name="queue"),
    path("studies/<int:pk>/next/", views.queue_next, name="next"),
    path("items/<uuid:public_id>/", views.review_page, name="review"),
    path("items/<uuid:public_id>/autosave/", views.autosave, name="autosave"),
    path("items/<uuid:public_id>/submit/", views.submit, name="submit"),
    path("items/<uuid:public_id>/skip/", views.skip, name="skip"),
    path("items/<uuid:public_id>/reopen/", views.reopen, name="reopen"),
    path("items/<uuid:public_id>/heartbeat/", views.heartbeat, name="heartbeat"),
    # Senior clinicians: the adjudication queue, addressed by the adjudication's own public_id.
    path("adjudication/", views_adjudication.adjudication_list, name="adjudications"),
    path(
        "adjudication/<uuid:public_id>/",
        views_adjudication.adjudication_page,
        name="adjudication",
    ),
]
