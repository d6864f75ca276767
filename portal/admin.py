"""The retention tools in the admin site: a project's retention period, the purge of its
studies past it (the dry run's listing, then a confirmation) and forgetting a person. They are
added here, above the apps whose models they act on, because the services they call reach
every app (portal.services.retention)."""

from django.contrib import admin, messages
from django.http import HttpResponse
from django.template.response import TemplateResponse

from accounts.admin import PersonAdmin
from accounts.models import User
from annotation.admin import ProjectAdmin
from annotation.models import Project
from audit.services import audit_record, fields_of
from portal.services.retention import RetentionError, person_forget, purge_plan, purge_run

CONFIRM = "confirm"


class RetentionProjectAdmin(ProjectAdmin):
    list_display = ("name", "retention_days", "created_at")
    fields = ("name", "retention_days")
    readonly_fields = ("name",)
    actions = ["purge_due"]

    def has_change_permission(self, request, obj=None) -> bool:
        # Only the retention period changes here; studies change through their services.
        return request.user.is_superuser

    def save_model(self, request, obj, form, change) -> None:
        before = fields_of(Project.objects.get(pk=obj.pk), "retention_days")
        super().save_model(request, obj, form, change)
        audit_record(
            actor=request.user,
            action="project.retention_changed",
            target=obj,
            before=before,
            after=fields_of(obj, "retention_days"),
        )

    @admin.action(description="Purge the studies past their retention period")
    def purge_due(self, request, queryset) -> HttpResponse | None:
        chosen = set(queryset.values_list("pk", flat=True))
        plans = [plan for plan in purge_plan() if plan.study.project_id in chosen]
        if not plans:
            self.message_user(request, "No study of these projects is past its retention period.")
            return None
        if request.POST.get(CONFIRM) != "yes":
            context = {
                **self.admin_site.each_context(request),
                "plans": plans,
                "chosen": queryset,
                "title": "Purge: what would be removed",
            }
            return TemplateResponse(request, "admin/portal/purge_confirm.html", context)
        force = request.POST.get("force_without_export") == "yes"
        try:
            done = purge_run(
                plans, actor=request.user, force_without_export=force, progress=lambda line: None
            )
        except RetentionError as error:
            self.message_user(request, str(error), level=messages.ERROR)
            return None
        self.message_user(request, f"Purged {len(done)} studies; their figures and counts stay.")
        return None


class RetentionPersonAdmin(PersonAdmin):
    actions = [*(PersonAdmin.actions or []), "forget_people"]

    @admin.action(description="Forget the selected annotators (keep their work, pseudonymous)")
    def forget_people(self, request, queryset) -> HttpResponse | None:
        if request.POST.get(CONFIRM) != "yes":
            context = {
                **self.admin_site.each_context(request),
                "people": queryset,
                "title": "Forget these people?",
            }
            return TemplateResponse(request, "admin/portal/forget_confirm.html", context)
        for person in queryset:
            try:
                person_forget(person, actor=request.user)
            except RetentionError as error:
                self.message_user(request, str(error), level=messages.ERROR)
            else:
                self.message_user(request, f"Forgotten: now {person.username}.")
        return None


admin.site.unregister(Project)
admin.site.register(Project, RetentionProjectAdmin)
admin.site.unregister(User)
admin.site.register(User, RetentionPersonAdmin)
