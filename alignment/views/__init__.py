"""Alignment pages by area: `reports` (the study report, exports, per-rubric pages,
disagreements, the calibration trend), `rescoring` (re-scoring a study and comparing juries),
`archive` (the study archive's export, job page, download and import)."""

from alignment.views import archive, reports, rescoring

__all__ = ["archive", "reports", "rescoring"]
