"""Builders for the researcher-side tests: submitted annotations stored directly, as the queue
and the review screen would leave them."""

from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus
from annotation.services.studies import panel_versions

CLINICAL_PANEL = (
    "clinical_safety",
    "triage_quality",
    "clinical_helpfulness",
    "profile_realism",
    "conversation_realism",
)


def full_scores(study, track: str, score: int = 3, **overrides) -> dict:
    return {v.rubric_id: overrides.get(v.rubric_id, score) for v in panel_versions(study, track)}


def annotate(item, annotator, *, scores=None, status=AssignmentStatus.SUBMITTED, **fields):
    """The annotator's assignment on the item, with a seat unless it is practice."""
    practice = fields.pop("practice", not annotator.licensed)
    taken = set(
        Assignment.objects.filter(item=item, track=annotator.track, slot__isnull=False).values_list(
            "slot", flat=True
        )
    )
    # Skipped, released and invalidated work gives its seat back, as the services do.
    seatless = status in (AssignmentStatus.SKIPPED, AssignmentStatus.RELEASED)
    seatless = seatless or practice or fields.get("invalidated_at") is not None
    slot = None if seatless else min(set(range(4)) - taken)
    return Assignment.objects.create(
        item=item,
        annotator=annotator,
        track=annotator.track,
        slot=slot,
        practice=practice,
        status=status,
        queue_key=f"{annotator.pk}-{item.pk}",
        scores=full_scores(item.study, annotator.track) if scores is None else scores,
        submitted_at=timezone.now() if status == AssignmentStatus.SUBMITTED else None,
        **fields,
    )
