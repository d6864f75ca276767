from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports, disagreement themes, re-scoring a study and comparing
    juries, the study archive."""

    name = "alignment"

    def ready(self) -> None:
        from alignment.services import corrected
        from alignment.services.archive import jobs
        from alignment.tasks import archive_job_send
        from benchmark.services import watch
        from jury.services.corrections import Corrections, corrections_register

        # Archive jobs hold files as well as work: the watch looks after each until its files
        # are deleted (alignment.services.archive.jobs).
        watch.register("archive", running=jobs.watched_job_ids, redispatch=jobs.archive_job_watch)
        # The jobs module imports no task (the task imports it): the task listens for its jobs.
        jobs.job_waiting.connect(archive_job_send, dispatch_uid="alignment.archive_job")
        # The jury report shows the clinician-corrected scores of the studies drawn from a job.
        corrections_register(
            Corrections(
                rows=corrected.job_corrected,
                export=corrected.job_corrected_export,
                method=corrected.CORRECTED_METHOD,
            )
        )
