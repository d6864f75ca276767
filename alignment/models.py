"""Disagreement themes: the researcher's names for why the jury and the clinicians differ.

A theme ("rubric ambiguity: post-action education") belongs to a project (or to every project
when it has none) and is attached to one study item for one rubric. Untagging deletes the tag
row: a tag is the researcher's working note, not evidence, and the annotations and judge scores
it points at keep their own history. Themes themselves are never deleted while tagged
(PROTECT), so counts per theme cannot silently lose a row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Project, StudyItem


class Theme(models.Model):
    name = models.CharField(max_length=200)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="themes"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_theme_per_project"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(project__isnull=True), name="unique_shared_theme"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ItemTheme(models.Model):
    """One theme on one (study item, rubric): the conversation as annotated in that study."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="themes")
    rubric_id = models.SlugField(max_length=60)
    theme = models.ForeignKey(Theme, on_delete=models.PROTECT, related_name="tags")
    note = models.CharField(max_length=500, blank=True)
    tagged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "rubric_id", "theme__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "rubric_id", "theme"], name="one_tag_per_item_rubric_theme"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_id} {self.rubric_id}: {self.theme_id}"
