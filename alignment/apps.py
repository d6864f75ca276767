from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports, disagreement themes, re-scoring a study and comparing
    juries, the study archive."""

    name = "alignment"

    def ready(self) -> None:
        from alignment import tasks  # noqa: F401 - declares archive jobs (jobs.tasks.job_kind)
        from jury.services.corrections import Corrections, corrections_register

        # The jury report shows the clinician-corrected scores of the studies drawn from a job.
        # The module is imported when a report asks: it draws on scipy, seconds of start-up
        # for every process otherwise.
        corrections_register(
            Corrections(
                rows=lambda job: _corrected().job_corrected(job),
                export=lambda job, fmt: _corrected().job_corrected_export(job, fmt),
                method=lambda: _corrected().CORRECTED_METHOD,
            )
        )


def _corrected():
    from alignment.services import corrected

    return corrected
