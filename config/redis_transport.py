"""kombu's Redis transport, with channels that outlive a lost connection quietly.

When the broker connection drops, Celery (5.7) closes the broken kombu connection, which
detaches the transport from its channels. A channel of that connection may still be asked to
talk to Redis afterwards: to put unacknowledged messages back while it closes, or to
acknowledge a task that was running during the outage and finishes after it. kombu then
fails with AttributeError ('NoneType' object has no attribute 'hostname'), which Celery
treats as unrecoverable: the worker stops instead of reconnecting. Here such a channel raises
the connection error it is, which Celery and kombu already handle (the restore or the ack is
given up and logged). Nothing is lost by it: Redis restores unacknowledged messages itself
after the visibility timeout, and leased work is sent again by the jobs' watch.

The channel also keeps one redis-py client for its publishes and acknowledgements, where
kombu made a new one for each (`Channel.conn_or_acquire`).
"""

from contextlib import contextmanager

import redis as redis_client
from kombu.transport import TRANSPORT_ALIASES, redis


class Channel(redis.Channel):
    _shared_client = None  # (pool, client): see conn_or_acquire

    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection.client is None:
            raise redis_client.ConnectionError("this channel's connection to Redis was closed")
        return super()._connparams(asynchronous=asynchronous)

    @contextmanager
    def conn_or_acquire(self, client=None):
        """kombu builds a new redis-py client for every publish and every acknowledgement, and
        redis-py's constructor costs more than the command it sends. One client per channel
        and connection pool serves every thread instead (a redis-py client is thread-safe:
        each command borrows a connection from the pool); a pool replaced after a lost
        connection gets a client of its own, built as kombu builds it."""
        if client:
            yield client
            return
        pool = self.pool
        shared = self._shared_client
        if shared is None or shared[0] is not pool:
            shared = self._shared_client = (pool, self._create_client())
        yield shared[1]


class Transport(redis.Transport):
    Channel = Channel


def use_for_redis_urls() -> None:
    """Make redis:// and rediss:// broker URLs use this transport (before any connection)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
