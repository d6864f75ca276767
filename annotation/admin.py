"""Read-only admin views of the study data. Every change goes through the services, which
keep the history; the admin site must not offer a way around them."""

from django.contrib import admin

from annotation.models import (
    Adjudication,
    Assignment,
    AssignmentHistory,
    CalibrationGuide,
    Notification,
    Project,
    ProjectMember,
    Study,
    StudyItem,
    StudyPurge,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(ReadOnlyAdmin):
    list_display = ("name", "created_at")


@admin.register(Study)
class StudyAdmin(ReadOnlyAdmin):
    list_display = ("name", "project", "kind", "round_number", "status", "sample_size")
    list_filter = ("kind", "status", "project")


@admin.register(StudyItem)
class StudyItemAdmin(ReadOnlyAdmin):
    list_display = ("study", "position", "conversation")
    list_filter = ("study",)


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "item",
        "annotator",
        "track",
        "status",
        "practice",
        "synthetic",
        "invalidated_at",
    )
    list_filter = ("status", "track", "practice", "synthetic", "item__study")
    search_fields = ("public_id", "annotator__username")


@admin.register(AssignmentHistory)
class AssignmentHistoryAdmin(ReadOnlyAdmin):
    list_display = ("assignment", "kind", "actor", "at")
    list_filter = ("kind",)


@admin.register(CalibrationGuide)
class CalibrationGuideAdmin(ReadOnlyAdmin):
    list_display = ("title", "project", "after_study", "published_at")


@admin.register(ProjectMember)
class ProjectMemberAdmin(ReadOnlyAdmin):
    list_display = ("annotator", "project", "quota", "enrolled_at", "enrolled_by", "withdrawn_at")
    list_filter = ("project",)


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ("item", "rubric_id", "reason", "adjudicator", "score", "adjudicated_at")
    list_filter = ("reason", "item__study")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    """The outbox: what was sent to whom, and why a message was not (turned off, no address,
    the mail server's refusal)."""

    list_display = ("recipient", "kind", "status", "attempts", "created_at", "sent_at", "error")
    list_filter = ("status", "kind")
    search_fields = ("recipient__username", "key")


@admin.register(StudyPurge)
class StudyPurgeAdmin(ReadOnlyAdmin):
    """What each retention purge removed, and the hashes that tie the kept figures to it."""

    list_display = ("study", "at", "by", "forced_without_export")
