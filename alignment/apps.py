from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports. Models arrive with their issue."""

    name = "alignment"
