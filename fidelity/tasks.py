"""Celery tasks of the fidelity review: its one kind of job, declared the way every app
declares its jobs (jobs.tasks). Views, commands and the API start a review with
fidelity.services.reviews.review_launch and jobs.services.starts.job_start."""

from fidelity.models import FidelityReview
from fidelity.services import reviews
from jobs.tasks import leased_job_tasks

reviewing = leased_job_tasks(
    task_name="fidelity.conversation_review",
    kind="fidelity_review",
    job_model=FidelityReview,
    running=reviews.running_review_ids,
    execute=reviews.conversation_review_execute,
    job_id_of=reviews.review_id_of,
    dispatch=reviews.review_dispatch,
)
