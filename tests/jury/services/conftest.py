from tests.jury.services.builders import (  # noqa: F401 - fixtures shared with tests/jury/web
    fast_password_hashing,
    offline_jury,
    played_run,
    scored_job,
    world,
    world_job,
)
