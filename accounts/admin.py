from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.models import User
from accounts.services import held_work_release
from audit.services import audit_record, fields_of

AUDITED_FIELDS = ("role", "track", "licensed", "senior", "is_active")


@admin.register(User)
class PersonAdmin(UserAdmin):
    list_display = (
        "username",
        "email",
        "role",
        "track",
        "licensed",
        "senior",
        "is_active",
        "origin",
    )
    list_filter = ("role", "track", "licensed", "is_active", "origin")
    fieldsets = UserAdmin.fieldsets + (
        ("Role", {"fields": ("role", "track", "licensed", "senior", "origin")}),
    )
    readonly_fields = ("origin",)  # set by the import that made the account
    add_fieldsets = UserAdmin.add_fieldsets + (("Role", {"fields": ("role", "track", "licensed")}),)

    def save_model(self, request, obj, form, change) -> None:
        before = fields_of(User.objects.get(pk=obj.pk), *AUDITED_FIELDS) if change else {}
        super().save_model(request, obj, form, change)
        after = fields_of(obj, *AUDITED_FIELDS)
        if after != before:
            action = "person.role_changed" if change else "person.created"
            audit_record(actor=request.user, action=action, target=obj, before=before, after=after)
        if before.get("is_active") and not obj.is_active:
            held_work_release(obj, actor=request.user)
