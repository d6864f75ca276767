import pytest

from tests.support import worker_forks
from tests.support.workers import redis_server


@pytest.fixture(params=["embedded", "redis"])
def transport(request, tmp_path):
    """The queue a worker uses: None for the embedded folder queue, else a Redis URL."""
    if request.param == "embedded":
        yield None
    else:
        yield from redis_server(tmp_path)


# Started as the folder is collected, so its imports overlap the first tests rather than
# delay the first worker (tests/support/worker_forks.py).
worker_forks.forker()
