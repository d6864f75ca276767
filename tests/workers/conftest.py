import pytest

from tests.support.workers import redis_server


@pytest.fixture(params=["embedded", "redis"])
def transport(request, tmp_path):
    """The queue a worker uses: None for the embedded folder queue, else a Redis URL."""
    if request.param == "embedded":
        yield None
    else:
        yield from redis_server(tmp_path)
