from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern
from django.views.generic import RedirectView

from accounts.access import STAFF, role_required
from api.main import api

app_name = "api"
# The API's root address opens the docs: a page for people (anonymous visitors go to login).
# The schema and the docs check their caller themselves (api.auth.docs_access): a token works.
docs_redirect = role_required(*STAFF)(RedirectView.as_view(pattern_name="api:openapi-view"))


def _routes(patterns: list) -> list:
    """The site asks for a login on every page (LoginRequiredMiddleware); API routes check
    their caller themselves (api.auth) and answer 401 / 403 as JSON instead of redirecting."""
    for pattern in patterns:
        if not isinstance(pattern, URLPattern):
            continue
        if pattern.name == "api-root":
            pattern.callback = docs_redirect  # django-ninja's own is a 404 outside DEBUG
        else:
            pattern.callback = login_not_required(pattern.callback)
    return patterns


urlpatterns = _routes(api.urls[0])
