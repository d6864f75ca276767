from django.apps import AppConfig


class FidelityConfig(AppConfig):
    name = "fidelity"
    verbose_name = "Simulated patient fidelity"

    def ready(self) -> None:
        from benchmark.services.trace_marks import marks_register
        from fidelity import tasks  # noqa: F401 - declares review jobs (jobs.tasks)
        from fidelity.services.reviews import conversation_marks
        from llm.engine.providers.offline import scripts_register

        scripts_register({"fidelity_review": "fidelity.engine.offline_reviewer:respond"})
        marks_register(conversation_marks)  # the reviewer's findings on the conversation page
