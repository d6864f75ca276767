from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit trail: who changed what, when, with the values before and after."""

    name = "audit"
