from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from benchmark import tasks
        from benchmark.services import cases, runs, watch

        watch.register("run", running=runs.running_run_ids, redispatch=tasks.run_redispatch)
        watch.register("set", running=cases.running_set_ids, redispatch=tasks.enrichment_redispatch)
        # Named model endpoints: the data file, or the newest list an admin saved.
        from benchmark.engine.providers import endpoints
        from benchmark.services.endpoints import endpoints_in_force

        endpoints.use_source(endpoints_in_force)
