"""The study archive: export a study into one zip, import it into any site
(alignment.engine.archive is the format; see docs/architecture.md).

The names below are loaded when first asked for (PEP 562): exporting draws on pandas and the
agreement statistics, and every process imports this package at start-up (the retention
service, the archive job's task), so an eager import cost each of them seconds."""

from importlib import import_module

_WHERE = {
    "ArchiveError": "alignment.engine.archive",
    "study_archive_write": "alignment.services.archive.export",
    "study_tables": "alignment.services.archive.export",
    "ImportedStudy": "alignment.services.archive.load",
    "study_archive_import": "alignment.services.archive.load",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
