"""The Celery app: Redis when REDIS_URL is set, otherwise the embedded folder queue."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("healthbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="config.ping")
def ping(value: int) -> dict:
    """A diagnostic task: proves a worker process picked work up from the queue."""
    return {"value": value, "worker_pid": os.getpid()}
