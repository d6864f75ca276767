"""The run page's buttons and the API's run actions: one service for both.

A resumed run is sent to the workers through jobs.services.starts, which knows the run's
task (benchmark.tasks declares it), so this module imports no task.
"""

from benchmark.models import Run
from benchmark.services import runs
from jobs.services.starts import job_start

RUN_ACTIONS = ("pause", "cancel", "resume")


def run_control(
    run: Run, action: str, *, actor, retry_failed: bool = False, cost_limit_usd=None
) -> None:
    """One of RUN_ACTIONS: a resumed run is dispatched again once committed. Raises
    runs.RunError when the run's state refuses it."""
    if action == "pause":
        runs.run_pause(run, actor=actor)
    elif action == "cancel":
        runs.run_cancel(run, actor=actor)
    elif action == "resume":
        runs.run_resume(run, retry_failed=retry_failed, cost_limit_usd=cost_limit_usd, actor=actor)
        job_start(run)
    else:
        raise ValueError(f"No run action {action!r}; use one of {', '.join(RUN_ACTIONS)}.")
