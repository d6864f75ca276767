from django.apps import AppConfig


class JuryConfig(AppConfig):
    name = "jury"

    def ready(self) -> None:
        from jury import tasks  # noqa: F401 - declares scoring jobs (jobs.tasks.job_kind)
