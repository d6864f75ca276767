from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """Clinician studies (blinded queues, clinician scores)."""

    name = "annotation"

    def ready(self) -> None:
        from accounts.signals import account_deactivated, projects_claimed
        from annotation.services.enrolment import claimed_projects_enrol
        from annotation.services.moves import held_work_release
        from annotation.services.outbox import recorded
        from annotation.tasks import notifications_send_soon

        account_deactivated.connect(held_work_release, dispatch_uid="annotation.held_work")
        projects_claimed.connect(claimed_projects_enrol, dispatch_uid="annotation.sso_projects")
        # The outbox imports only models; the task that sends its rows is wired to it here.
        recorded.connect(notifications_send_soon, dispatch_uid="annotation.notifications_send")
