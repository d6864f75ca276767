from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """Clinician studies (blinded queues, clinician scores). Models arrive with their issue."""

    name = "annotation"
