from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports, disagreement themes and the re-scoring loop."""

    name = "alignment"
