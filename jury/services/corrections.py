"""The clinician-corrected scores a jury report shows beside the jury's own.

They come from the clinician studies drawn from a scoring job, which live above the jury app
(alignment computes them from annotation's scores). That app registers its functions when it
starts (alignment.apps), so the jury report can show them without importing an app above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class Corrections:
    rows: Callable  # (job) -> [(study, rows)], the newest target study first
    export: Callable  # (job, format) -> text of one table over every study
    method: Callable[[], str]  # how the figures are made, for the page (intervals, minimum n)


_registered: list[Corrections] = []


def corrections_register(corrections: Corrections) -> None:
    _registered[:] = [corrections]


def job_corrected(job) -> list:
    return _registered[0].rows(job) if _registered else []


def corrected_method() -> str:
    return _registered[0].method() if _registered else ""


def job_corrected_export(job, fmt: str) -> str:
    if not _registered:
        raise ImproperlyConfigured("No installed app supplies clinician-corrected scores.")
    return _registered[0].export(job, fmt)
