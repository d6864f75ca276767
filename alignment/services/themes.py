"""Tagging disagreements with themes, and counting them per theme and rubric.

A theme is created in the study's project the first time a researcher types its name; the
same name in the same project reuses the theme (case-insensitively), so "Rubric ambiguity"
and "rubric ambiguity" count together. Untagging deletes the tag (see alignment.models).
"""

from __future__ import annotations

from collections import Counter

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q

from alignment.models import ItemTheme, Theme
from annotation.models import Study, StudyItem

MAX_NAME = 200


def project_themes(study: Study):
    """Themes a researcher can pick on this study: the project's and the shared ones."""
    return Theme.objects.filter(Q(project=study.project_id) | Q(project__isnull=True))


def theme_tag(
    *,
    item: StudyItem,
    rubric_id: str,
    user,
    theme: Theme | None = None,
    name: str = "",
    note: str = "",
) -> ItemTheme:
    """Tag (item, rubric) with an existing theme or with a theme named `name` (created in the
    study's project when new). Tagging twice with the same theme returns the existing tag."""
    study = item.study
    if rubric_id not in set(study.rubric_versions.values_list("rubric_id", flat=True)):
        raise ValidationError({"rubric": f"This study has no rubric {rubric_id!r}."})
    if theme is None:
        theme = _theme_named(study, name, user)
    elif not project_themes(study).filter(pk=theme.pk).exists():
        raise ValidationError({"theme": "That theme belongs to another project."})
    try:
        with transaction.atomic():
            tag, _ = ItemTheme.objects.get_or_create(
                item=item,
                rubric_id=rubric_id,
                theme=theme,
                defaults={"tagged_by": user, "note": note.strip()[:500]},
            )
    except IntegrityError:  # a second tab tagged the same theme at the same moment
        tag = ItemTheme.objects.get(item=item, rubric_id=rubric_id, theme=theme)
    return tag


def theme_untag(tag: ItemTheme) -> None:
    tag.delete()


def _theme_named(study: Study, name: str, user) -> Theme:
    name = " ".join(name.split())
    if not name:
        raise ValidationError({"name": "Pick a theme or type the name of a new one."})
    if len(name) > MAX_NAME:
        raise ValidationError({"name": f"A theme name has at most {MAX_NAME} characters."})
    existing = project_themes(study).filter(name__iexact=name).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return Theme.objects.create(name=name, project=study.project, created_by=user)
    except IntegrityError:
        return Theme.objects.get(project=study.project, name=name)


def tags_by_key(study: Study) -> dict[tuple[int, str], list[ItemTheme]]:
    """(conversation id, rubric id) -> its tags in this study."""
    tags: dict[tuple[int, str], list[ItemTheme]] = {}
    for tag in ItemTheme.objects.filter(item__study=study).select_related("theme", "item"):
        tags.setdefault((tag.item.conversation_id, tag.rubric_id), []).append(tag)
    return tags


def theme_counts(study: Study) -> tuple[list[str], list[dict]]:
    """Rubric ids in use, and per theme: tag counts per rubric and in total (most used first)."""
    counts = Counter(
        ItemTheme.objects.filter(item__study=study).values_list("theme__name", "rubric_id")
    )
    rubrics = sorted({rubric for _, rubric in counts})
    themes = sorted({name for name, _ in counts})
    rows = [
        {
            "theme": name,
            "counts": [counts[(name, rubric)] for rubric in rubrics],
            "total": sum(counts[(name, rubric)] for rubric in rubrics),
        }
        for name in themes
    ]
    return rubrics, sorted(rows, key=lambda row: (-row["total"], row["theme"]))
