from django.apps import AppConfig


class RubricLabConfig(AppConfig):
    """Instance-specific rubrics generated from evidence, and jury sensitivity tests."""

    name = "rubric_lab"
    verbose_name = "Rubric lab"

    def ready(self) -> None:
        from rubric_lab import tasks  # noqa: F401 - declares the lab's jobs (jobs.tasks.job_kind)
