"""System checks run by runserver, migrate and the worker: unreachable Redis is named, early."""

from pathlib import Path

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
                id="carejury.E001",
            )
        ]
    return []


@register(deploy=False)
def static_files_collected(app_configs, **kwargs):
    """Production serves hashed static files from STATIC_ROOT: without them every page fails."""
    if not settings.PRODUCTION or (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
        return []
    return [
        Error(
            f"Static files have not been collected into {settings.STATIC_ROOT}.",
            hint="Run: python manage.py collectstatic --noinput",
            id="carejury.E002",
        )
    ]
