from django.apps import AppConfig


class JuryConfig(AppConfig):
    name = "jury"

    def ready(self) -> None:
        from jobs.services import watch
        from jury import tasks
        from jury.services import scoring

        watch.register(
            "scoring", running=scoring.running_job_ids, redispatch=tasks.scoring_redispatch
        )
