from django.apps import AppConfig


class RubricLabConfig(AppConfig):
    """Instance-specific rubrics generated from evidence, and jury sensitivity tests."""

    name = "rubric_lab"
    verbose_name = "Rubric lab"

    def ready(self) -> None:
        from jobs.services import watch
        from rubric_lab import tasks
        from rubric_lab.services import instance_scoring, pipeline

        watch.register(
            "rubric_generation",
            running=pipeline.running_job_ids,
            redispatch=tasks.generation_redispatch,
        )
        watch.register(
            "instance_score",
            running=instance_scoring.pending_score_ids,
            redispatch=tasks.instance_score_redispatch,
        )
        for kind, (running, redispatch) in tasks.WATCHED.items():
            watch.register(kind, running=running, redispatch=redispatch)
