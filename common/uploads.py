"""Reading an uploaded file: one size limit and one text check for every upload form.

Uploads are read whole (they are parsed and validated in memory), so a file over the limit is
refused from its declared size before a byte is read; a binary file (NUL bytes, or bytes that
are not UTF-8) gets an error naming what is wrong instead of a parser's confusion.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError

from common.text_files import NotText, decode_text


def upload_limit_bytes() -> int:
    return settings.UPLOAD_LIMIT_MB * 1_000_000


def upload_size_check(upload) -> None:
    """A FileField validator."""
    limit = upload_limit_bytes()
    if upload.size > limit:
        raise ValidationError(
            f"{upload.name} holds {upload.size / 1_000_000:.1f} MB; uploads are limited to "
            f"{limit / 1_000_000:.0f} MB (UPLOAD_LIMIT_MB)."
        )


def uploaded_text(upload) -> str:
    """The file as text, or a ValidationError saying why it is not usable text."""
    upload_size_check(upload)
    try:
        return decode_text(upload.read())
    except NotText as refused:
        if refused.binary:
            raise ValidationError(
                f"{upload.name} is a binary file, not text; upload CSV, JSON or YAML."
            ) from None
        raise ValidationError(
            f"{upload.name} is not UTF-8 text (first bad byte on line {refused.line}); "
            "save it as UTF-8."
        ) from None
