"""Template context every staff page gets from the benchmark app."""

from accounts.access import STAFF
from jobs.services.queue import UNAVAILABLE_MESSAGE, queue_available


def queue_health(request) -> dict:
    """Whether to warn that the task queue is unavailable (staff launch and watch work;
    annotators' pages never depend on it)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.has_role(*STAFF):
        return {}
    if queue_available():
        return {}
    return {"queue_unavailable": UNAVAILABLE_MESSAGE}
