from django.apps import AppConfig


class JuryConfig(AppConfig):
    name = "jury"

    def ready(self) -> None:
        from jury import tasks  # noqa: F401 - declares scoring jobs (jobs.tasks.job_kind)
        from llm.engine.providers.offline import scripts_register

        scripts_register({"judge": "jury.engine.offline_judge:respond"})  # the offline judge
