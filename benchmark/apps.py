from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from benchmark import tasks  # noqa: F401 - declares runs and sets (jobs.tasks.job_kind)
        from llm.engine.providers.offline import scripts_register

        # The offline provider's scripts for the roles the benchmark owns.
        scripts_register(
            {
                "enrichment": "benchmark.engine.enrichment_script:respond",
                "roster": "benchmark.engine.sandbox.roster_script:respond",
                "patient": "benchmark.engine.agents.offline_patient:respond",
                "assistant": "benchmark.engine.agents.offline_assistant:respond",
            }
        )
