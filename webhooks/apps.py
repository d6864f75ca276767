from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Researchers' webhooks: every job's end, signed and delivered to their URLs by the
    workers, with retries and a delivery log."""

    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from jobs.signals import batch_ended, job_ended
        from webhooks import tasks

        # The job machinery announces every end; it knows nothing of webhooks.
        job_ended.connect(tasks.job_ended_deliver, dispatch_uid="webhooks.job_ended")
        batch_ended.connect(tasks.batch_ended_deliver, dispatch_uid="webhooks.batch_ended")
