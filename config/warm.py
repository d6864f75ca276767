"""Load what every request needs while a web process starts, not during its first request.

Django loads the URL configuration - and with it every view module and what those import:
pandas, matplotlib, scipy, most of a second of CPU - when the first request is resolved, so
the first person to reach a freshly started process (after a deploy, a restart, or a gunicorn
worker replaced) waited for it. config/wsgi.py calls `warm_up` once the application exists:
under gunicorn in each worker as it boots, under runserver (the demo's server) before it
listens.

Then what was loaded is frozen out of the garbage collector's full passes (`freeze_startup`).
"""

from __future__ import annotations

import gc


def warm_up() -> None:
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018 - imports every URL module and its views
    reverse("home")  # builds the resolver's reverse lookup, which every page uses
    freeze_startup()


def freeze_startup() -> None:
    """Leave the objects of the web process's start-up out of the collector's full passes.

    Django, the apps and the libraries they import (pandas, scipy, matplotlib) are a quarter of
    a million objects that live as long as the process, and every full pass of the cyclic
    collector walked all of them: 0.2 s of CPU each, once every few heavy requests (an uncached
    study report of 3,000 conversations met one every second or third time). Frozen, they are
    still freed by reference counting; only the cycle search skips them. gunicorn's workers,
    forked after `--preload`, also keep sharing those pages with the parent (Python's gc docs).
    Garbage made during start-up is collected first, so nothing unreachable is frozen.

    Workers do not freeze: with the start-up out of the count, the collector's full passes come
    far more often (a pass waits for new survivors to reach a quarter of the old ones), and in
    the worker CPU bench a conversation's CPU was no better for it (3.1-4.8 ms in reference
    terms with it, 3.1 without)."""
    gc.collect()
    gc.freeze()
