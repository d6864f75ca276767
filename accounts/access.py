"""Role checks for views: every view names the roles that may reach it."""

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from accounts.models import Role

STAFF = (Role.RESEARCHER, Role.ADMIN)
ADMIN_ONLY = (Role.ADMIN,)
EVERYONE = (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN)


def role_required(*roles: str) -> Callable:
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            user = request.user
            if not user.is_authenticated or not user.has_role(*roles):
                raise PermissionDenied("Your role cannot open this page.")
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = tuple(roles)
        return wrapped

    return decorator
