"""Forms of the study archive: the export button's option and the import upload."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError


def archive_size_check(upload) -> None:
    """Archives have their own limit (ARCHIVE_UPLOAD_LIMIT_MB), far above other uploads'."""
    limit = settings.ARCHIVE_UPLOAD_LIMIT_MB * 1_000_000
    if upload.size > limit:
        raise ValidationError(
            f"{upload.name} holds {upload.size / 1_000_000:.1f} MB; study archives are limited "
            f"to {limit / 1_000_000:.0f} MB (ARCHIVE_UPLOAD_LIMIT_MB)."
        )


class ArchiveExportForm(forms.Form):
    with_usernames = forms.BooleanField(
        required=False,
        label="Write usernames",
        help_text="Off: annotators and staff appear as pseudonyms (A1, A2, ... / S1, ...).",
    )


class ArchiveImportForm(forms.Form):
    file = forms.FileField(
        validators=[archive_size_check],
        help_text="A study archive (.zip) exported by CareJury.",
    )
