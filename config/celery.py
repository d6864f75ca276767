"""The Celery app: Redis when REDIS_URL is set, otherwise the embedded folder queue."""

import logging
import os

from celery import Celery, bootsteps, signals

from config import folder_transport, redis_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
redis_transport.use_for_redis_urls()
folder_transport.use_for_filesystem_urls()

logger = logging.getLogger(__name__)

app = Celery("carejury")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class WatchesOnConnect(bootsteps.StartStopStep):
    """Every time this worker connects to the broker, it takes up the watch of every running job.

    A consumer step starts again after each reconnection, unlike `worker_ready`, which fires
    once. It matters when Redis restarted empty: the watch messages (waiting out their
    countdown in some worker, or queued) were lost with it, and without a watch the work lost
    with them would never be sent again."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, consumer) -> None:
        from jobs.tasks import resume_watches

        try:
            resume_watches()
        except Exception:  # the database may be down too; the worker must keep consuming
            logger.exception("could not take up the watches of running jobs")


app.steps["consumer"].add(WatchesOnConnect)


class ReportsHeartbeat(bootsteps.StartStopStep):
    """While this worker runs, it reports itself (jobs.services.worker_heartbeats), so
    job pages can tell work that moves from work no worker is there to play.

    A worker step, not a consumer step: the worker process is alive (and keeps playing what
    it holds) while its broker connection is down and the consumer restarts."""

    def __init__(self, worker, **kwargs) -> None:
        super().__init__(worker, **kwargs)
        self.reporter = None

    def start(self, worker) -> None:
        from django.conf import settings

        from jobs.services.worker_heartbeats import Reporter

        self.reporter = Reporter(mode=settings.QUEUE_MODE, concurrency=worker.concurrency)
        self.reporter.start()

    def stop(self, worker) -> None:
        if self.reporter is not None:
            self.reporter.stop()
            self.reporter = None


app.steps["worker"].add(ReportsHeartbeat)


@signals.worker_init.connect
def provider_sdks_imported(**kwargs) -> None:
    """Import the model SDKs this worker has credentials for before it takes a task
    (llm.engine.providers.client.adapters_import)."""
    from llm.configured import provider_settings
    from llm.engine.providers.client import adapters_import

    try:
        imported = adapters_import(provider_settings())
    except Exception:  # the first task imports them then; the worker must start
        logger.exception("could not import the model SDKs ahead of the first task")
    else:
        logger.info("model SDK adapters imported: %s", ", ".join(imported) or "none")


@signals.task_prerun.connect
@signals.task_postrun.connect
def connections_checked(sender=None, **kwargs) -> None:
    """Keep each worker thread's database connection from task to task, as Django keeps a web
    thread's from request to request: replaced once older than CONN_MAX_AGE, after an error
    that left it unusable, or when the health check (CONN_HEALTH_CHECKS, PostgreSQL) before a
    task's first query finds it broken (the database restarted). Celery's own fixup closes
    every connection around every task unless CELERY_DB_REUSE_MAX is set (settings), and
    opening a PostgreSQL connection costs more than a short task's queries."""
    from django.db import close_old_connections

    # An eager task runs inside its caller's transaction (tests, --inline): leave it alone.
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    close_old_connections()


class SendsNotifications(bootsteps.StartStopStep):
    """Every NOTIFICATION_TICK_SECONDS this worker writes the deadline reminders that are due
    and sends every due notification (annotation.services.notifications): what a lost task or
    an unavailable queue left behind, and retries of a mail server's refusals.

    A periodic look inside every worker instead of a beat scheduler: nothing extra to run on
    either queue, and with several workers each looks (claims and the outbox's unique keys
    make that send each message once)."""

    def __init__(self, worker, **kwargs) -> None:
        super().__init__(worker, **kwargs)
        self.ticker = None

    def start(self, worker) -> None:
        from django.conf import settings

        from jobs.services.leases import Heartbeat

        # A thread of its own: a slow mail server must not hold back the leases' heartbeats.
        self.ticker = Heartbeat(
            _notifications_tick,
            label="notifications",
            interval=settings.NOTIFICATION_TICK_SECONDS,
            thread="notifications",
        )
        self.ticker.start()

    def stop(self, worker) -> None:
        if self.ticker is not None:
            self.ticker.stop()
            self.ticker = None


def _notifications_tick() -> None:
    from annotation.services.notifications import notifications_tick

    try:
        notifications_tick()
    except Exception:  # a bad row or template must not stop the next looks
        logger.exception("could not send the due notifications")


app.steps["worker"].add(SendsNotifications)


class DeliversWebhooks(bootsteps.StartStopStep):
    """Every WEBHOOK_TICK_SECONDS this worker attempts the webhook deliveries that are due and
    that no task holds (webhooks.tasks.deliveries_tick): what a lost task or an unavailable
    queue left behind. Claims make a delivery go out once however many workers look."""

    def __init__(self, worker, **kwargs) -> None:
        super().__init__(worker, **kwargs)
        self.ticker = None

    def start(self, worker) -> None:
        from django.conf import settings

        from jobs.services.leases import Heartbeat

        # Its own thread: a slow receiver must hold back neither the leases nor the mail.
        self.ticker = Heartbeat(
            _webhooks_tick,
            label="webhooks",
            interval=settings.WEBHOOK_TICK_SECONDS,
            thread="webhooks",
        )
        self.ticker.start()

    def stop(self, worker) -> None:
        if self.ticker is not None:
            self.ticker.stop()
            self.ticker = None


def _webhooks_tick() -> None:
    from webhooks.tasks import deliveries_tick

    try:
        deliveries_tick()
    except Exception:  # one bad row must not stop the next looks
        logger.exception("could not attempt the due webhook deliveries")


app.steps["worker"].add(DeliversWebhooks)


@app.task(name="config.ping", ignore_result=False)
def ping(value: int) -> dict:
    """A diagnostic task: proves a worker process picked work up from the queue."""
    return {"value": value, "worker_pid": os.getpid()}
