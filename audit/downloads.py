"""Every file the site hands out leaves through `download_response`, which records who took
what and when in the audit trail before the file is sent: annotation exports, report and
agreement tables, figures, run exports, study archives, the audit trail itself. A view cannot
send an attachment without it (tests/audit/test_download_trail.py checks the code and every
download URL of the access table)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO

from django.db import models
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from audit.services import audit_record
from common.synthetic import synthetic_file_name

# What was downloaded; the audit action is "download.<kind>".
KINDS = (
    "annotations",
    "table",
    "figure",
    "conversations",
    "archive",
    "report_bundle",
    "audit_trail",
    "manifest",
)


def download_response(
    request: HttpRequest,
    content: str | bytes | Iterable[str] | BinaryIO,
    *,
    filename: str,
    content_type: str,
    kind: str,
    target: models.Model | None,
    synthetic: bool = False,
) -> HttpResponse:
    """An attachment named `filename`: text or bytes, an iterator of text (streamed) or an
    open binary file. The audit event keeps the file name and the query string, which holds
    the choices that shaped the file (filters, pseudonymised or not). A file holding
    synthetic clinicians' scores says so in its name (common.synthetic)."""
    if kind not in KINDS:
        raise ValueError(f"download kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if synthetic:
        filename = synthetic_file_name(filename)
    audit_record(
        actor=request.user,
        action=f"download.{kind}",
        target=target,
        after={"file": filename, "query": request.GET.urlencode()},
    )
    if isinstance(content, str | bytes):
        response = HttpResponse(content, content_type=content_type)
    elif hasattr(content, "read"):
        response = FileResponse(content, content_type=content_type)
    else:
        response = StreamingHttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
