"""Disagreement themes: the researcher's names for why the jury and the clinicians differ.

A theme ("rubric ambiguity: post-action education") belongs to a project (or to every project
when it has none) and is attached to one study item for one rubric. Untagging deletes the tag
row: a tag is the researcher's working note, not evidence, and the annotations and judge scores
it points at keep their own history. Themes themselves are never deleted while tagged
(PROTECT), so counts per theme cannot silently lose a row.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.models import Project, Study, StudyItem
from jury.models import ScoringJob
from llm.fields import RedactedTextField


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


class ArchiveJobKind(models.TextChoices):
    EXPORT = "export", "Export"
    IMPORT = "import", "Import"
    BUNDLE = "bundle", "Static report"


class ArchiveJobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"


class ArchiveJob(models.Model):
    """Writing or reading one study archive in the workers (alignment.services.archive): a
    paper-scale study takes far longer than a web request may. The page polls `done / total`.

    Export: `study` is the study written, `file_path` the archive once finished, offered for
    download for ARCHIVE_DOWNLOAD_HOURS. Import: `file_path` is the uploaded archive and `study`
    the study it became. Bundle: the static report of `scoring_jobs` (alignment.services.bundle)
    as a zip, offered like an export; `clinician_text` whether clinicians' written feedback
    goes in. Either way the job's files are deleted once it no longer needs them
    (alignment.services.archive.jobs), and `file_removed_at` says when."""

    kind = models.CharField(max_length=10, choices=ArchiveJobKind.choices)
    study = models.ForeignKey(
        Study, on_delete=models.PROTECT, null=True, blank=True, related_name="archive_jobs"
    )
    with_usernames = models.BooleanField(default=False)
    scoring_jobs = models.ManyToManyField(ScoringJob, blank=True, related_name="bundle_jobs")
    clinician_text = models.BooleanField(default=False)
    file_name = models.CharField(max_length=300)  # shown and offered for download
    file_path = models.CharField(max_length=500, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=ArchiveJobStatus.choices, default=ArchiveJobStatus.QUEUED
    )
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    # The running worker's claim, extended as it reports progress: a second delivery of the
    # task does nothing while it holds, and takes the job over once a dead worker's claim ran
    # out (the queue sends the message again after a worker is lost).
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Claims so far: a job whose worker stopped this many times (an archive that kills the
    # worker, e.g. out of memory) ends failed instead of being sent again forever. The number
    # also tells a worker whether the job is still its own when it writes the outcome.
    attempts = models.PositiveSmallIntegerField(default=0)
    error = RedactedTextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    file_removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.file_name}"

    @property
    def download_until(self):
        """When a finished export stops being offered (and its file is deleted); else None."""
        if self.kind == ArchiveJobKind.IMPORT or self.status != ArchiveJobStatus.FINISHED:
            return None
        finished = self.finished_at or self.created_at
        return finished + timedelta(hours=settings.ARCHIVE_DOWNLOAD_HOURS)

    @property
    def downloadable(self) -> bool:
        until = self.download_until
        return until is not None and self.file_removed_at is None and timezone.now() < until

    @property
    def live(self) -> bool:
        return self.status in (ArchiveJobStatus.QUEUED, ArchiveJobStatus.RUNNING)

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.done / self.total)) if self.total else 0
