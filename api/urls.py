from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern
from django.views.generic import RedirectView

from accounts.access import STAFF, role_required
from api.main import api

app_name = "api"
# Pages for people (staff only; anonymous visitors are sent to login): the schema, its docs,
# and the API's root address, which opens the docs.
PAGES = {"openapi-json", "openapi-view", "api-root"}
docs_redirect = role_required(*STAFF)(RedirectView.as_view(pattern_name="api:openapi-view"))


def _routes(patterns: list) -> list:
    """The site asks for a login on every page (LoginRequiredMiddleware); API routes check
    their caller themselves (api.auth) and answer 401 / 403 as JSON instead of redirecting."""
    for pattern in patterns:
        if not isinstance(pattern, URLPattern):
            continue
        if pattern.name == "api-root":
            pattern.callback = docs_redirect  # django-ninja's own is a 404 outside DEBUG
        elif pattern.name not in PAGES:
            pattern.callback = login_not_required(pattern.callback)
    return patterns


urlpatterns = _routes(api.urls[0])
