"""The review screen's form: posted fields -> a Draft for the annotation services.

Field names, per rubric of the annotator's panel: `score-<rubric_id>` (1-5, radio buttons),
`feedback-<rubric_id>` (text), `links-<rubric_id>` (trace event ids separated by spaces); then
`overall_comment` and `version` (the version the page last saw, for the conflict check); and
for each field the page changed, `base-<field>`: its value before the change.
Only the fields present in the post go into the draft: a field that was not posted keeps its
saved value, a field posted empty clears it (see `Draft`). The page's autosave posts only the
fields it changed; a plain submit posts the whole form, where an unscored rubric's radio buttons
send nothing, so it keeps its saved score. Range and
rubric checks live in the service; this module only reads the post and refuses what cannot be
read at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django import forms
from django.core.exceptions import ValidationError

from annotation.services.annotations import Draft

SEEN_PREFIX = "base-"


def draft_from_post(data, rubric_ids: Iterable[str]) -> tuple[Draft, int]:
    """The draft and the version a review form posted; ValidationError names unreadable fields."""
    draft, errors = _fields_from_post(data, rubric_ids)
    version = data.get("version", "")
    if not version.isdigit():
        errors.append("the page did not say which saved version it shows; reload it")
    if errors:
        raise ValidationError(errors)
    return draft, int(version)


def seen_from_post(data, rubric_ids: Iterable[str]) -> Draft | None:
    """What the page started from for each field it changed (`base-<field>`, the value the
    server last confirmed to it), so a save from a stale tab can be merged; None when the post
    says nothing of it (a plain form post)."""
    if not any(name.startswith(SEEN_PREFIX) for name in data):
        return None
    seen, errors = _fields_from_post(data, rubric_ids, prefix=SEEN_PREFIX)
    if errors:
        raise ValidationError(errors)
    return seen


def page_fields(assignment, rubric_ids: Iterable[str]) -> str:
    """What the server holds, as JSON of the form's own field names and values: the page starts
    from it and brings fields another tab changed up to date after a merged save."""
    fields = {"overall_comment": assignment.overall_comment}
    for rubric_id in rubric_ids:
        score = assignment.scores.get(rubric_id)
        fields[f"score-{rubric_id}"] = "" if score is None else str(score)
        fields[f"feedback-{rubric_id}"] = assignment.feedback.get(rubric_id, "")
        fields[f"links-{rubric_id}"] = " ".join(assignment.event_links.get(rubric_id, []))
    return json.dumps(fields)


def _fields_from_post(data, rubric_ids: Iterable[str], prefix: str = "") -> tuple[Draft, list]:
    draft, errors = Draft(), []
    if f"{prefix}overall_comment" in data:
        draft.overall_comment = data[f"{prefix}overall_comment"].strip()
    for rubric_id in rubric_ids:
        if f"{prefix}score-{rubric_id}" in data:
            score = data[f"{prefix}score-{rubric_id}"].strip()
            if score and not score.isdigit():
                errors.append(f"{rubric_id}: a score is a whole number from 1 to 5")
            else:
                draft.scores[rubric_id] = int(score) if score else None
        if f"{prefix}feedback-{rubric_id}" in data:
            draft.feedback[rubric_id] = data[f"{prefix}feedback-{rubric_id}"].strip()
        if f"{prefix}links-{rubric_id}" in data:
            links = data[f"{prefix}links-{rubric_id}"].split()
            draft.event_links[rubric_id] = list(dict.fromkeys(links))
    return draft, errors


class SkipForm(forms.Form):
    reason = forms.CharField(
        max_length=300,
        strip=True,
        error_messages={"required": "Say why you skip this item (it comes back at the end)."},
        widget=forms.TextInput(attrs={"placeholder": "e.g. outside my specialty, trace unclear"}),
    )


class AdjudicationForm(forms.Form):
    score = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(1, 6)],
        coerce=int,
        widget=forms.RadioSelect,
        label="Adjudicated score",
    )
    rationale = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=5000,
        label="Reason",
        help_text="What decides the score: the researcher reads it beside the clinicians'.",
    )
