from django.apps import AppConfig


class LlmConfig(AppConfig):
    """Model calls: chat types, structured output, the providers, the response cache, rate
    limits, prices of models and the named model endpoints."""

    name = "llm"
    verbose_name = "Model calls"

    def ready(self) -> None:
        from llm.engine.providers import endpoints
        from llm.services.endpoints import endpoints_in_force

        # Named model endpoints: the data file, or the newest list an admin saved.
        endpoints.use_source(endpoints_in_force)
