"""The project's settings, with whitenoise told to compress no file: for a test that needs
production's collected static files (the hashed names and their manifest, staticfiles.json)
but not the gzip and Brotli copies. Compressing the admin's and the API docs' scripts at
Brotli's highest level took 25 of the deploy check test's 30 s; the copies are whitenoise's
work and no test reads them.

Used as `manage.py collectstatic --settings tests.support.static_uncompressed`.
"""

from config.settings import *  # noqa: F403

# Every extension among the static files (the project's, the admin's, ninja's, django-htmx's);
# only the admin's LICENSE, with none, is still compressed.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = ["css", "js", "map", "md", "png", "svg", "txt"]
