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
"""

import redis as redis_client
from kombu.transport import TRANSPORT_ALIASES, redis


class Channel(redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection.client is None:
            raise redis_client.ConnectionError("this channel's connection to Redis was closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(redis.Transport):
    Channel = Channel


def use_for_redis_urls() -> None:
    """Make redis:// and rediss:// broker URLs use this transport (before any connection)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
