"""The versioned JSON API (/api/v1/), built with django-ninja: typed routes, an OpenAPI schema
and its docs page from the package's own static files. Each route calls the service the page
calls, through the page's form, so there is one copy of every rule. Every error is an RFC 9457
problem (api.problems)."""

from __future__ import annotations

import math

from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest
from ninja import NinjaAPI
from ninja.errors import HttpError, Throttled
from ninja.errors import ValidationError as SchemaError
from ninja.parser import Parser

from api.auth import TokenRateThrottle, docs_access, staff, token_writes_audited
from api.problems import Refused, problem_response, schema_problem_content
from api.routes import (
    adjudication,
    assignments,
    benchmark,
    catalog,
    jury,
    lab,
    lab_studies,
    people,
    sharing,
    studies,
    study_reports,
    webhooks,
)
from common import json_text
from common.query import BadQuery


class BoundedJsonParser(Parser):
    """Request bodies read like every other JSON from outside (common.json_text)."""

    def parse_body(self, request: HttpRequest):
        return json_text.loads(request.body.decode("utf-8"))


class CareJuryApi(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        return schema_problem_content(super().get_openapi_schema(**kwargs))

    def get_openapi_operation_id(self, operation) -> str:
        """The route function's name (each is unique): what a generated client calls it."""
        return operation.view_func.__name__


api = CareJuryApi(
    title="CareJury API",
    version="1",
    urls_namespace="api",
    # The schema and its docs: staff with a token or a session (anonymous browsers go to login).
    docs_decorator=docs_access,
    auth=staff(),
    throttle=[TokenRateThrottle()],
    parser=BoundedJsonParser(),
    description="Case sets, runs, conversations, scoring jobs, report tables, studies, "
    "agreement tables, study archives and the rubric lab. Staff only.",
)
api.add_decorator(token_writes_audited)
api.add_router("/", benchmark.router)
api.add_router("/", jury.router)
api.add_router("/", studies.router)
api.add_router("/", catalog.router)
api.add_router("/", webhooks.router)
# The rubric lab: imports, generation, coverage, sensitivity, refinement, ablations.
api.add_router("/", lab.router)
api.add_router("/", lab_studies.router)
# People, enrolment, moving work, adjudication and the study report's files.
api.add_router("/", people.router)
api.add_router("/", assignments.router)
api.add_router("/", adjudication.router)
api.add_router("/", study_reports.router)
# The leaderboard and the static report bundle.
api.add_router("/", sharing.router)


@api.exception_handler(BadRequest)
def bad_query(request: HttpRequest, error: BadRequest):
    """A filter or cursor that cannot be used (common.query.BadQuery says which and why)."""
    if not isinstance(error, BadQuery):
        return problem_response(400, str(error))
    where = [{"location": f"query.{error.name}", "message": error.reason}]
    return problem_response(400, str(error), where)


@api.exception_handler(SchemaError)
def bad_input(request: HttpRequest, error: SchemaError):
    """A body or parameter of the wrong shape (or a filter value not offered): 400 with every
    problem in words and where it is."""
    problems = [_problem_entry(problem) for problem in error.errors]
    detail = "; ".join(f"{p['location']}: {p['message']}" for p in problems)
    return problem_response(400, detail, problems)


@api.exception_handler(Refused)
def refused_input(request: HttpRequest, error: Refused):
    return problem_response(error.status, error.detail, error.errors)


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, error: HttpError):
    """django-ninja says only "Cannot parse request body" of any body it cannot read; one nested
    too deep says so (the caller can fix it). A 429 raised while authenticating (too many
    refused tokens) says when to come back, as the rate limit's own 429 does."""
    cause = error.__cause__
    detail = f"{error}: {cause}" if isinstance(cause, json_text.TooDeep) else str(error)
    response = problem_response(error.status_code, detail)
    if isinstance(error, Throttled) and error.wait is not None:
        response["Retry-After"] = str(math.ceil(error.wait))
    return response


@api.exception_handler(ValidationError)
def refused(request: HttpRequest, error: ValidationError):
    return problem_response(400, " ".join(error.messages))


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, error: PermissionDenied):
    return problem_response(403, str(error) or "Forbidden.")


@api.exception_handler(Http404)
def not_found(request: HttpRequest, error: Http404):
    return problem_response(404, str(error) or "Not found.")


def _problem_entry(problem: dict) -> dict:
    """A pydantic error ({loc, msg}) or django-ninja's own ({"cursor": "Invalid Cursor"})."""
    if "msg" not in problem:
        name, message = next(iter(problem.items()))
        return {"location": str(name), "message": str(message)}
    where = ".".join(str(part) for part in problem.get("loc", ()))
    return {"location": where or "body", "message": problem["msg"]}
