from tests.jury.services.builders import played_run, world  # noqa: F401 - shared fixtures
