from django.apps import AppConfig


class JobsConfig(AppConfig):
    """What every kind of job shares: leases, the watch, queueing, worker heartbeats, cost
    limits, model-call accounting and the CLI's waits."""

    name = "jobs"
    verbose_name = "Jobs"
