"""Navigation per role: each link names the roles that see it."""

from django.conf import settings
from django.urls import reverse

from accounts.access import ADMIN_ONLY, EVERYONE

NAVIGATION = [
    ("Home", "home", EVERYONE),
    ("People", "people", ADMIN_ONLY),
]


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_links": []}
    links = [
        {"label": label, "url": reverse(name), "active": request.path == reverse(name)}
        for label, name, roles in NAVIGATION
        if user.has_role(*roles)
    ]
    return {"nav_links": links, "queue_mode": settings.QUEUE_MODE}
