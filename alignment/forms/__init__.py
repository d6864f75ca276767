"""Alignment forms by area: re-scoring a study (`rescoring`) and the study archive
(`archive`)."""

from alignment.forms.archive import ArchiveExportForm, ArchiveImportForm
from alignment.forms.rescoring import RescoreForm, new_jury_form, version_field

__all__ = [
    "ArchiveExportForm",
    "ArchiveImportForm",
    "RescoreForm",
    "new_jury_form",
    "version_field",
]
