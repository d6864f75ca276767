"""Calibration guides: a researcher writes one after a round, publishes it, and the annotators
of the project see the latest published guide beside the review screen and on their queue.

The body is markdown rendered with raw HTML switched off (a `<script>` in it shows as text) and
images off (a guide never makes an annotator's browser fetch from elsewhere). Worked examples
point at items of the round; annotators see them through `guide_examples`, which hands out the
item's number in the annotator's own numbering and its scenario only, never its conversation,
model or scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from accounts.models import NotificationKind
from annotation.models import CalibrationGuide, Project, ProjectMember, Study, StudyItem
from annotation.services.outbox import notify
from annotation.services.worklist import my_item_numbers
from audit.services import audit_record

_MARKDOWN = MarkdownIt("js-default", {"html": False, "linkify": False}).disable("image")
NOTE_LIMIT = 2000


def guide_render(guide: CalibrationGuide) -> SafeString:
    """The guide's body as HTML that is safe to embed: markdown-it escapes every raw tag and
    refuses javascript:/vbscript:/data: links."""
    return mark_safe(_MARKDOWN.render(guide.body_markdown))  # noqa: S308 - html=False escapes


def published_guide(project: Project | int) -> CalibrationGuide | None:
    """The guide annotators of the project see now: the latest published one."""
    project_id = project.pk if isinstance(project, Project) else project
    return (
        CalibrationGuide.objects.filter(project_id=project_id, published_at__isnull=False)
        .order_by("-published_at", "-pk")
        .first()
    )


def study_guide(study: Study) -> CalibrationGuide | None:
    """The guide the annotators of `study` see: the project's published guide, in every
    calibration round and in a target study whose researcher chose to show it there."""
    return published_guide(study.project_id) if study.shows_guide else None


def guide_examples(guide: CalibrationGuide, *, annotator) -> list[dict]:
    """The worked examples as blinded rows: item number in its round, scenario, note.

    For an annotator, an example is numbered as their own worklist numbers it (the order they
    opened their items) and carries their assignment's `public_id` to link to; an example they
    never opened has no number. The study's sampling position is never shown to them: it is
    not their numbering, and extremes are sampled first, so it would hint at the jury's score.
    Staff (`annotator=None`) see the sampling position, as every staff page numbers items.
    """
    items = StudyItem.objects.filter(pk__in=[e["item"] for e in guide.examples]).select_related(
        "study", "conversation__entry"
    )
    by_id = {item.pk: item for item in items}
    numbers = _numbers(by_id.values(), annotator)
    return [
        {
            **numbers.get(e["item"], {"number": None, "public_id": None}),
            "round": by_id[e["item"]].study.name,
            "condition": by_id[e["item"]].conversation.entry.condition,
            "request": by_id[e["item"]].conversation.entry.task_subcategory,
            "note": e["note"],
        }
        for e in guide.examples
        if e["item"] in by_id
    ]


def _numbers(items, annotator) -> dict[int, dict]:
    """Item id -> {"number", "public_id"} as the reader knows the item."""
    if annotator is None:
        return {item.pk: {"number": item.position + 1, "public_id": None} for item in items}
    return my_item_numbers(annotator, {item.study_id for item in items})


def guide_save(
    *,
    study: Study,
    title: str,
    body_markdown: str,
    examples: Sequence[dict],
    actor,
    guide: CalibrationGuide | None = None,
) -> CalibrationGuide:
    """Create a draft guide after `study`, or change a draft; a published guide is frozen
    (annotators may have read it), so a change means writing the next guide."""
    if guide is not None and guide.published_at is not None:
        raise ValidationError("A published guide cannot change; write a new guide instead.")
    _check_examples(study, examples)
    guide = guide or CalibrationGuide(project=study.project, after_study=study, created_by=actor)
    guide.title, guide.body_markdown = title.strip(), body_markdown.strip()
    guide.examples = [{"item": e["item"], "note": e["note"].strip()} for e in examples]
    guide.full_clean()
    guide.save()
    return guide


def _check_examples(study: Study, examples: Sequence[dict]) -> None:
    own = set(study.items.values_list("pk", flat=True))
    errors = []
    for example in examples:
        if example["item"] not in own:
            errors.append(f"item {example['item']} is not an item of {study.name}")
        elif not example["note"].strip():
            errors.append("every example needs a note saying what it teaches")
        elif len(example["note"]) > NOTE_LIMIT:
            errors.append(f"an example note is longer than {NOTE_LIMIT} characters")
    if errors:
        raise ValidationError({"examples": errors})


def guide_publish(guide: CalibrationGuide, *, actor=None, now=None) -> CalibrationGuide:
    if guide.published_at is None:
        guide.published_at = now or timezone.now()
        guide.save(update_fields=["published_at"])
        audit_record(
            actor=actor,
            action="guide.published",
            target=guide,
            after={"published_at": guide.published_at.isoformat(), "study": guide.after_study_id},
        )
        members = ProjectMember.objects.active().filter(project_id=guide.project_id)
        notify(
            kind=NotificationKind.GUIDE_PUBLISHED,
            recipients=[m.annotator for m in members.select_related("annotator")],
            key=f"guide:{guide.pk}",
            context={"guide": guide.pk},
        )
    return guide
