"""Navigation per role (each link names the roles that see it) and the display menu's
choices."""

from django.conf import settings
from django.urls import reverse

from accounts.access import ADMIN_ONLY, EVERYONE, STAFF
from accounts.models import TextSize, Theme

NAVIGATION = [
    ("Home", "home", EVERYONE),
    ("Distributions", "benchmark:distributions", STAFF),
    ("Benchmark sets", "benchmark:sets", STAFF),
    ("Agents", "benchmark:agents", STAFF),
    ("Runs", "benchmark:runs", STAFF),
    ("Prices", "benchmark:prices", STAFF),
    ("Endpoints", "benchmark:endpoints", ADMIN_ONLY),
    ("Rubrics", "jury:rubrics", EVERYONE),
    ("Juries", "jury:juries", STAFF),
    ("Reports", "jury:reports", STAFF),
    ("Studies", "annotation:staff_studies", STAFF),
    ("Alignment", "alignment:index", STAFF),
    ("Rubric lab", "rubric_lab:pipelines", STAFF),
    ("People", "people", ADMIN_ONLY),
]


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_links": []}
    links = [
        {"label": label, "url": reverse(name), "active": _is_section(request.path, reverse(name))}
        for label, name, roles in NAVIGATION
        if user.has_role(*roles)
    ]
    return {
        "nav_links": links,
        "queue_mode": settings.QUEUE_MODE,
        "display_choices": {"themes": Theme.choices, "text_sizes": TextSize.choices},
    }


def _is_section(path: str, url: str) -> bool:
    return path == url if url == "/" else path.startswith(url)
