"""System checks run by runserver, migrate and the worker: unreachable Redis is named, early."""

from django.conf import settings
from django.core.checks import Error, register


@register(deploy=False)
def redis_reachable(app_configs, **kwargs):
    if not settings.REDIS_URL:
        return []
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        return [
            Error(
                f"REDIS_URL={settings.REDIS_URL} is set but Redis cannot be reached: {error}",
                hint="Start Redis, fix REDIS_URL, or unset it to use the embedded queue.",
                id="healthbench.E001",
            )
        ]
    return []
