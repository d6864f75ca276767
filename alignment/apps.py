from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    """Jury-clinician agreement reports, disagreement themes and the re-scoring loop."""

    name = "alignment"

    def ready(self) -> None:
        from alignment.services.archive import jobs
        from benchmark.services import watch

        # Archive jobs hold files as well as work: the watch looks after each until its files
        # are deleted (alignment.services.archive.jobs).
        watch.register("archive", running=jobs.watched_job_ids, redispatch=jobs.archive_job_watch)
