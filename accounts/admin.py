from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.models import User


@admin.register(User)
class PersonAdmin(UserAdmin):
    list_display = ("username", "email", "role", "track", "licensed", "is_active")
    list_filter = ("role", "track", "licensed", "is_active")
    fieldsets = UserAdmin.fieldsets + (("Role", {"fields": ("role", "track", "licensed")}),)
    add_fieldsets = UserAdmin.add_fieldsets + (("Role", {"fields": ("role", "track", "licensed")}),)
