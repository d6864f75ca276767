import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# While the server starts, not in the first request a fresh process answers (config/warm.py).
from config.warm import warm_up  # noqa: E402

warm_up()
