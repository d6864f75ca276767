"""The project's packages in their import order, lowest first: the one list the import rule
(tests/foundation/test_layout.py) and the whole-project source scans read. Packages of one
layer do not import each other; docs/architecture.md draws this order."""

APP_LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),  # helpers any app may use: text from uploads, CSV, query parameters
    ("audit",),
    ("accounts",),
    ("llm",),  # model calls: chat, structured output, providers, prices
    ("jobs",),  # job machinery: leases, the watch, queueing, heartbeats, cost limits
    ("benchmark",),
    ("fidelity",),  # reviews of the simulated patient: read by the jury report and studies
    ("jury",),
    ("annotation", "rubric_lab"),
    ("alignment",),
    # Told of every job's end through jobs.signals; describes jobs of every app above jobs.
    ("webhooks",),
    # Above the apps, side by side: the site's front door (home page, demo) and the JSON API.
    ("portal", "api"),
    ("config",),  # settings, URLs, Celery, WSGI: the wiring of everything
)

PROJECT_PACKAGES: tuple[str, ...] = tuple(name for layer in APP_LAYERS for name in layer)
