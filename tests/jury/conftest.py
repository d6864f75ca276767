from tests.jury.services.builders import (  # noqa: F401 - fixtures for services and web tests
    offline_jury,
    played_run,
    scored_job,
    world,
    world_job,
)
