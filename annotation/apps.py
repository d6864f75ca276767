from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """Clinician studies (blinded queues, clinician scores)."""

    name = "annotation"

    def ready(self) -> None:
        from accounts.signals import account_deactivated
        from annotation.services.moves import held_work_release

        account_deactivated.connect(held_work_release, dispatch_uid="annotation.held_work")
