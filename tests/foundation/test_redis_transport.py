"""The project's Redis transport (config/redis_transport.py) against a real redis-server:
messages go out and come back through one redis-py client per channel, not one per message."""

import pytest
import redis
from kombu import Connection, Exchange, Queue

from config import redis_transport
from tests.support.workers import redis_server


@pytest.fixture
def redis_url(tmp_path):
    yield from redis_server(tmp_path)


@pytest.fixture
def clients_built(monkeypatch):
    built = []
    original = redis.Redis.__init__

    def counted(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counted)
    return built


def round_trip(connection, queue, messages: int) -> list[int]:
    producer = connection.Producer(connection.default_channel)
    for n in range(messages):
        producer.publish({"n": n}, exchange=queue.exchange, routing_key=queue.routing_key,
                         declare=[queue])  # fmt: skip
    received = []

    def take(body, message) -> None:
        received.append(body["n"])
        message.ack()

    with connection.Consumer(queue, callbacks=[take]):
        while len(received) < messages:
            connection.drain_events(timeout=10)
    return sorted(received)


@pytest.mark.redis
def test_messages_go_out_and_are_acknowledged_without_a_client_each(redis_url, clients_built):
    redis_transport.use_for_redis_urls()
    queue = Queue("transport-test", Exchange("transport-test"), routing_key="transport-test")
    with Connection(redis_url) as connection:
        assert round_trip(connection, queue, 10) == list(range(10))
        after_the_first = len(clients_built)
        assert round_trip(connection, queue, 10) == list(range(10))
    assert len(clients_built) == after_the_first
