from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports, disagreement themes, re-scoring a study and comparing
    juries, the study archive."""

    name = "alignment"

    def ready(self) -> None:
        from alignment import tasks  # noqa: F401 - declares archive jobs (jobs.tasks.job_kind)
        from alignment.services import corrected
        from jury.services.corrections import Corrections, corrections_register

        # The jury report shows the clinician-corrected scores of the studies drawn from a job.
        corrections_register(
            Corrections(
                rows=corrected.job_corrected,
                export=corrected.job_corrected_export,
                method=corrected.CORRECTED_METHOD,
            )
        )
