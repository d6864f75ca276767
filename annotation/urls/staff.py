"""Researcher pages of clinician studies (staff only), under /annotation/staff/."""

from django.urls import path

from accounts.access import STAFF, role_required
from annotation.views import staff as views
from annotation.views import studyops as views_studyops
from common.redirects import moved_to

urlpatterns = [
    path("staff/studies/", views.study_list, name="staff_studies"),
    path("staff/studies/new/", views.study_new, name="staff_study_new"),
    path("staff/studies/<int:pk>/", views.study_detail, name="staff_study"),
    path("staff/studies/<int:pk>/lock/", views.study_lock_view, name="staff_study_lock"),
    path(
        "staff/studies/<int:pk>/guide/", views.study_guide_setting, name="staff_study_guide_setting"
    ),
    path(
        "staff/studies/<int:pk>/annotations.<str:fmt>",
        views.study_export,
        name="staff_study_export",
    ),
    path("staff/studies/<int:pk>/import/", views.study_import, name="staff_study_import"),
    path(
        "staff/studies/<int:pk>/round-report/", views.round_report_view, name="staff_round_report"
    ),
    path("staff/studies/<int:pk>/guides/new/", views.guide_new, name="staff_guide_new"),
    path("staff/guides/<int:pk>/", views.guide_detail, name="staff_guide"),
    path("staff/guides/<int:pk>/publish/", views.guide_publish, name="staff_guide_publish"),
    path(
        "staff/assignments/<uuid:public_id>/",
        views.assignment_detail,
        name="staff_assignment",
    ),
    path(
        "staff/assignments/<uuid:public_id>/invalidate/",
        views.assignment_invalidate,
        name="staff_assignment_invalidate",
    ),
]

# Running a study: members, deadline, moving work, adjudication (annotation.views.studyops).
_ASSIGNMENT = "staff/assignments/<uuid:public_id>"
urlpatterns += [
    path("staff/projects/<int:pk>/members/", views_studyops.members, name="staff_members"),
    path("staff/members/<int:pk>/quota/", views_studyops.member_quota, name="staff_member_quota"),
    path(
        "staff/members/<int:pk>/withdraw/",
        views_studyops.member_withdraw,
        name="staff_member_withdraw",
    ),
    path(
        "staff/studies/<int:pk>/deadline/",
        views_studyops.study_deadline,
        name="staff_study_deadline",
    ),
    path(
        "staff/studies/<int:pk>/second-phase/",
        views_studyops.study_second_phase_add,
        name="staff_study_second_phase",
    ),
    path(
        "staff/studies/<int:pk>/annotators/<int:annotator>/reassign/",
        views_studyops.study_reassign_all,
        name="staff_study_reassign_all",
    ),
    path(
        f"{_ASSIGNMENT}/release/",
        views_studyops.assignment_release,
        name="staff_assignment_release",
    ),
    path(
        f"{_ASSIGNMENT}/extend/", views_studyops.assignment_extend, name="staff_assignment_extend"
    ),
    path(
        f"{_ASSIGNMENT}/reassign/",
        views_studyops.assignment_reassign,
        name="staff_assignment_reassign",
    ),
    path(
        f"{_ASSIGNMENT}/reopen/", views_studyops.assignment_reopen, name="staff_assignment_reopen"
    ),
    path(
        "staff/studies/<int:pk>/adjudication/",
        views_studyops.study_adjudication,
        name="staff_adjudication",
    ),
    path(
        "staff/studies/<int:pk>/adjudication/send/",
        views_studyops.adjudication_send,
        name="staff_adjudication_send",
    ),
    path(
        "staff/studies/<int:pk>/adjudication/jury/",
        views_studyops.adjudication_jury,
        name="staff_adjudication_jury",
    ),
]


# The study archive's pages moved to the alignment app (alignment/urls/archive.py); their old
# addresses and names send the browser on.
def _moved(name: str):
    return role_required(*STAFF)(moved_to(f"alignment:{name}"))


urlpatterns += [
    path("staff/studies/<int:pk>/archive/", _moved("study_archive"), name="staff_study_archive"),
    path("staff/archives/import/", _moved("archive_import"), name="staff_archive_import"),
    path("staff/archives/<int:pk>/", _moved("archive_job"), name="staff_archive_job"),
    path(
        "staff/archives/<int:pk>/download/",
        _moved("archive_download"),
        name="staff_archive_download",
    ),
]
