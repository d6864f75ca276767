"""Annotation pages by area: `annotator` (queue, review screen), `adjudication` (a senior
clinician's adjudication queue), `staff` (researchers' study pages), `studyops` (members,
deadlines, moving work, sending to adjudication)."""

from annotation.views import adjudication, annotator, staff, studyops

__all__ = ["adjudication", "annotator", "staff", "studyops"]
