"""The audit trail in the admin site: list, filter, search, export as CSV; never edited."""

import json

from django.contrib import admin
from django.http import HttpResponse

from audit.downloads import download_response
from audit.models import AuditEvent
from common.csv_export import rows_csv

CSV_COLUMNS = (
    "at",
    "actor",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "before",
    "after",
    "note",
    "hash",
)


class EventKindFilter(admin.SimpleListFilter):
    """Reads, downloads and changes apart: a security review asks who *saw* what."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("read", "Reads"), ("download", "Downloads"), ("change", "Changes")]

    def queryset(self, request, queryset):
        if self.value() in ("read", "download"):
            return queryset.filter(action__startswith=f"{self.value()}.")
        if self.value() == "change":
            return queryset.exclude(action__startswith="read.").exclude(
                action__startswith="download."
            )
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "action", "object_type", "object_id", "object_repr", "note")
    list_filter = (EventKindFilter, "action", "object_type", "actor", "at")
    search_fields = ("object_repr", "object_id", "note", "actor__username")
    date_hierarchy = "at"
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    actions = ["export_csv"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Export the selected events as CSV")
    def export_csv(self, request, queryset) -> HttpResponse:
        rows = (
            [
                event.at.isoformat(),
                event.actor.username if event.actor else "",
                event.action,
                event.object_type,
                event.object_id,
                event.object_repr,
                json.dumps(event.before, sort_keys=True),
                json.dumps(event.after, sort_keys=True),
                event.note,
                event.hash,
            ]
            for event in queryset.select_related("actor").order_by("at", "pk")
        )
        return download_response(
            request,
            rows_csv(rows, header=CSV_COLUMNS),
            filename="audit-trail.csv",
            content_type="text/csv; charset=utf-8",
            kind="audit_trail",
            target=None,
        )
