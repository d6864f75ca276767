"""One shape for every error the API answers: RFC 9457 problem details
(`application/problem+json`). `type` is `about:blank` (the status says what went wrong),
`title` the status's phrase, `detail` the sentence written for the caller and, for input that
cannot be used, `errors`: one entry per problem, each naming where it is.

`responses()` declares these answers on a route beside its success, so the schema (and a
client generated from it) knows every status a route may give."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from ninja import Schema
from pydantic import Field

MEDIA_TYPE = "application/problem+json"
# Every route may refuse its caller (no or a bad token; a role or scope that may not).
ALWAYS = (401, 403, 429)


class ProblemError(Schema):
    """One problem with the input: where it is (`query.status`, `body.size`, `file` line 3)."""

    location: str = Field(description="query, path, body, form, file or cursor, and the name")
    message: str


class Problem(Schema):
    """RFC 9457 problem details."""

    type: str = Field("about:blank", description="about:blank: the status says the kind")
    title: str = Field(description="The status's phrase, e.g. Bad Request")
    status: int
    detail: str = Field(description="What went wrong, written for the caller")
    errors: list[ProblemError] = Field(
        default_factory=list, description="Each problem with the input, where it is"
    )


def responses(ok: dict[int, Any], *errors: int) -> dict[int, Any]:
    """A route's answers: its successes, then `errors` and those every route may give, each a
    Problem."""
    return ok | {status: Problem for status in sorted({*errors, *ALWAYS})}


def problem(status: int, detail: str, errors: list[dict] | None = None) -> dict:
    return {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "errors": errors or [],
    }


def problem_response(status: int, detail: str, errors: list[dict] | None = None) -> HttpResponse:
    body = json.dumps(problem(status, detail, errors), cls=DjangoJSONEncoder)
    return HttpResponse(body, status=status, content_type=MEDIA_TYPE)


def schema_problem_content(schema: dict) -> dict:
    """The OpenAPI schema with every 4xx/5xx answer served as `application/problem+json`
    (django-ninja declares each as application/json)."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            for status, answer in operation.get("responses", {}).items():
                content = answer.get("content", {})
                if str(status)[0] in "45" and "application/json" in content:
                    answer["content"] = {MEDIA_TYPE: content.pop("application/json")}
    return schema


class Refused(Exception):
    """Input a route cannot use: a 400 (or `status`) whose `errors` say where each problem is."""

    def __init__(self, detail: str, errors: list[dict] | None = None, status: int = 400):
        super().__init__(detail)
        self.detail, self.errors, self.status = detail, errors or [], status
