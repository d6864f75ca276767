from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from benchmark import tasks  # noqa: F401 - declares runs and sets (jobs.tasks.job_kind)
