"""Annotation forms by area, as the views: `annotator` (review screen, skip, adjudication),
`staff` (studies, imports, guides), `studyops` (members, deadlines, moving work)."""

from annotation.forms import annotator, staff, studyops

__all__ = ["annotator", "staff", "studyops"]
