from django.apps import AppConfig


class JobsConfig(AppConfig):
    """What every kind of job shares: leases, the watch, queueing, worker heartbeats, cost
    limits, model-call accounting and the CLI's waits."""

    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from jobs import tasks  # noqa: F401 - gives the watch its task (watch.watch_start)
