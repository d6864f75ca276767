"""The versioned JSON API (/api/v1/), built with django-ninja: typed routes, an OpenAPI schema
and its docs page from the package's own static files. Each route calls the service the page
calls, through the page's form, so there is one copy of every rule."""

from __future__ import annotations

import math

from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.http import HttpRequest
from ninja import NinjaAPI
from ninja.errors import HttpError, Throttled
from ninja.errors import ValidationError as SchemaError
from ninja.parser import Parser

from accounts.access import STAFF, role_required
from api.auth import TokenRateThrottle, staff, token_writes_audited
from api.routes import benchmark, jury, studies, webhooks
from common import json_text


class BoundedJsonParser(Parser):
    """Request bodies read like every other JSON from outside (common.json_text)."""

    def parse_body(self, request: HttpRequest):
        return json_text.loads(request.body.decode("utf-8"))


api = NinjaAPI(
    title="CareJury API",
    version="1",
    urls_namespace="api",
    # The schema and its docs page are pages: staff only, anonymous visitors sent to login.
    docs_decorator=role_required(*STAFF),
    auth=staff(),
    throttle=[TokenRateThrottle()],
    parser=BoundedJsonParser(),
    description="Case sets, runs, conversations, scoring jobs, report tables, studies, "
    "agreement tables and study archives. Staff only.",
)
api.add_decorator(token_writes_audited)
api.add_router("/", benchmark.router)
api.add_router("/", jury.router)
api.add_router("/", studies.router)
api.add_router("/", webhooks.router)


@api.exception_handler(BadRequest)
def bad_query(request: HttpRequest, error: BadRequest):
    """A filter or cursor that cannot be used (common.query.BadQuery says which and why)."""
    return api.create_response(request, {"detail": str(error)}, status=400)


@api.exception_handler(SchemaError)
def bad_input(request: HttpRequest, error: SchemaError):
    """A body or parameter of the wrong shape: 400 with every problem in words."""
    problems = [_problem_text(problem) for problem in error.errors]
    return api.create_response(request, {"detail": "; ".join(problems)}, status=400)


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, error: HttpError):
    """django-ninja says only "Cannot parse request body" of any body it cannot read; one nested
    too deep says so (the caller can fix it). A 429 raised while authenticating (too many
    refused tokens) says when to come back, as the rate limit's own 429 does."""
    cause = error.__cause__
    detail = f"{error}: {cause}" if isinstance(cause, json_text.TooDeep) else str(error)
    response = api.create_response(request, {"detail": detail}, status=error.status_code)
    if isinstance(error, Throttled) and error.wait is not None:
        response["Retry-After"] = str(math.ceil(error.wait))
    return response


@api.exception_handler(ValidationError)
def refused(request: HttpRequest, error: ValidationError):
    return api.create_response(request, {"detail": " ".join(error.messages)}, status=400)


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, error: PermissionDenied):
    return api.create_response(request, {"detail": str(error) or "Forbidden."}, status=403)


def _problem_text(problem: dict) -> str:
    """A pydantic error ({loc, msg}) or django-ninja's own ({"cursor": "Invalid Cursor"})."""
    if "msg" not in problem:
        return "; ".join(f"{name}: {message}" for name, message in problem.items())
    where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
    return f"{where}: {problem['msg']}" if where else problem["msg"]
