"""The study archive: export a study into one zip, import it into any site
(alignment.engine.archive is the format; see docs/architecture.md)."""

from alignment.engine.archive import ArchiveError
from alignment.services.archive.export import study_archive_write, study_tables
from alignment.services.archive.load import ImportedStudy, study_archive_import

__all__ = [
    "ArchiveError",
    "ImportedStudy",
    "study_archive_import",
    "study_archive_write",
    "study_tables",
]
