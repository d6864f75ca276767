from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from benchmark import tasks
        from benchmark.services import cases, runs
        from jobs.services import watch

        watch.register("run", running=runs.running_run_ids, redispatch=tasks.run_redispatch)
        watch.register("set", running=cases.running_set_ids, redispatch=tasks.enrichment_redispatch)
