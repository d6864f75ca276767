"""Django for a bench: a fresh SQLite file in a throwaway folder, never the user's data."""

from __future__ import annotations

import os


def django_on_fresh_sqlite(data_dir: str) -> None:
    """Point Django at a fresh SQLite file in data_dir and create the schema."""
    os.environ["DATA_DIR"] = data_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
