"""Load what every request needs while a web process starts, not during its first request.

Django loads the URL configuration - and with it every view module and what those import:
pandas, matplotlib, scipy, most of a second of CPU - when the first request is resolved, so
the first person to reach a freshly started process (after a deploy, a restart, or a gunicorn
worker replaced) waited for it. config/wsgi.py calls `warm_up` once the application exists:
under gunicorn in each worker as it boots, under runserver (the demo's server) before it
listens.
"""

from __future__ import annotations


def warm_up() -> None:
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018 - imports every URL module and its views
    reverse("home")  # builds the resolver's reverse lookup, which every page uses
