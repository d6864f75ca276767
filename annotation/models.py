"""Clinician studies: the sample, who scores what, and every score with its history.

Blinding lives in the data model as much as in the views: an assignment is addressed by its own
random `public_id`, never by the conversation's or the run's, and nothing here stores a model
name. Nothing is deleted either: a released reservation, a skip, a reopened submission and an
invalidation each leave the row (and a history entry) in place.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotation.engine.sampling import item_weight
from benchmark.models import Conversation
from jury.models import RubricVersion, ScoringJob
from llm.fields import RedactedTextField


class Project(models.Model):
    """Groups a study's calibration rounds with its target studies: conversations used in a
    round are held out of every target study of the same project."""

    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # How long a locked study's conversations, free text and annotators' personal data are
    # kept; `manage.py purge` removes them afterwards (portal.services.retention). Blank: kept.
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Days after a study is locked until its personal data is purged; blank: kept.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class MemberQuerySet(models.QuerySet):
    def active(self):
        return self.filter(withdrawn_at__isnull=True)


class ProjectMember(models.Model):
    """An annotator enrolled in a project: they see its studies, and only they do.

    Withdrawing keeps the row (who was enrolled, when, by whom) with `withdrawn_at` set;
    enrolling again clears it. `quota` is how many items of each study of the project the
    annotator is asked to score: the queue serves no new item once they hold or submitted that
    many (blank: no limit, as many as the overlap leaves them)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="memberships"
    )
    quota = models.PositiveIntegerField(null=True, blank=True)
    enrolled_at = models.DateTimeField()
    enrolled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    objects = MemberQuerySet.as_manager()

    class Meta:
        ordering = ["project", "annotator__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "annotator"], name="one_membership")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.project}"

    @property
    def is_active(self) -> bool:
        return self.withdrawn_at is None


class StudyKind(models.TextChoices):
    CALIBRATION = "calibration", "Calibration round"
    TARGET = "target", "Target study"


class StudyStatus(models.TextChoices):
    OPEN = "open", "Open"
    LOCKED = "locked", "Locked"


class Study(models.Model):
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="studies")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=StudyKind.choices)
    round_number = models.PositiveSmallIntegerField(null=True, blank=True)
    scoring_jobs = models.ManyToManyField(ScoringJob, related_name="studies")
    rubric_versions = models.ManyToManyField(RubricVersion, related_name="studies")
    sample_size = models.PositiveIntegerField()
    overlap_clinical = models.PositiveSmallIntegerField(default=2)
    overlap_operational = models.PositiveSmallIntegerField(default=2)
    seed = models.BigIntegerField(default=0)
    include_infeasible = models.BooleanField(default=False)
    reservation_minutes = models.PositiveSmallIntegerField(default=45)
    # The project's published calibration guide is shown in calibration rounds; in a target
    # study only when the researcher chooses (a guide written for practice may steer the
    # scores the study is run to measure).
    guide_in_target = models.BooleanField(default=False)
    # The alternative annotator test's cost-benefit margin (alignment.engine.alt_test): how
    # much of its advantage over a clinician the jury may give up and still replace one.
    # Calderon et al. advise 0.2 for expert annotators, 0.1 for crowd workers.
    alt_test_epsilon = models.FloatField(
        default=0.2, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    # A clinician is flagged for recalibration when their bias (mean score minus the other
    # clinicians' or the jury's) moves by more than this many points between two rounds.
    drift_flag_points = models.FloatField(
        default=0.5, validators=[MinValueValidator(0.05), MaxValueValidator(4.0)]
    )
    # What the stratified sampler achieved: cells with available / sampled / expected counts
    # and the population's jury scores, the design's strata (absent for studies of the earlier
    # greedy sampler), shortfalls (annotation.engine.sampling).
    coverage = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=StudyStatus.choices, default=StudyStatus.OPEN)
    locked_at = models.DateTimeField(null=True, blank=True)
    # Set on a study re-created from a study archive (alignment.services.archive): the file it
    # came from and when. Such a study is locked: it is a record, not work in progress.
    imported_from = models.CharField(max_length=300, blank=True)
    imported_at = models.DateTimeField(null=True, blank=True)
    # When the annotators should be done; reminders go out two days before, and the dashboard
    # measures each annotator's pace against it.
    deadline = models.DateTimeField(null=True, blank=True)
    # Whether a senior clinician adjudicating an item of this study sees the jury's score.
    adjudication_shows_jury = models.BooleanField(default=False)
    # When `manage.py purge` removed its conversation text, free text and annotators' personal
    # data; the scores and the figures stay (StudyPurge keeps what was removed, counted).
    purged_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "kind", "round_number", "created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_study_name"),
            models.CheckConstraint(
                condition=Q(kind="target", round_number__isnull=True)
                | Q(kind="calibration", round_number__isnull=False),
                name="calibration_has_round",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_calibration(self) -> bool:
        return self.kind == StudyKind.CALIBRATION

    @property
    def is_locked(self) -> bool:
        return self.status == StudyStatus.LOCKED

    @property
    def shows_guide(self) -> bool:
        """Whether annotators of this study see the project's published calibration guide."""
        return self.is_calibration or self.guide_in_target

    def overlap_for(self, track: str) -> int:
        return self.overlap_clinical if track == "clinical" else self.overlap_operational


class StudyItem(models.Model):
    """One sampled conversation, with the stratum it was drawn for and its place in the
    sampling design (annotation.engine.sampling explains the design)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.PROTECT, related_name="study_items"
    )
    position = models.PositiveIntegerField()  # sampling order: extremes first
    # {"key": design stratum, "model", "rubric", "bin": the item's home cell}; items of studies
    # drawn before the exact design hold the cell the greedy sampler drew them for, no key.
    stratum = models.JSONField(default=dict, blank=True)
    # Recorded when the sample is drawn; empty / null on items drawn before they were.
    # The conversation's jury score bin per judged rubric: its cell of each rubric.
    jury_bins = models.JSONField(default=dict, blank=True)  # {rubric id: 1-5}
    cell_available = models.PositiveIntegerField(null=True, blank=True)  # N_h of `stratum`
    cell_drawn = models.PositiveIntegerField(null=True, blank=True)  # n_h drawn from `stratum`
    # The chance this conversation entered the sample, n_h / N_h (and, once a second phase was
    # drawn, its chance through either phase: annotation.engine.second_phase).
    inclusion_probability = models.FloatField(null=True, blank=True)
    # 1: the stratified first sample; 2: added where the judges disagree or the verdict is close.
    phase = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "conversation"], name="unique_study_item")
        ]

    def __str__(self) -> str:
        return f"{self.study_id}#{self.position}"

    @property
    def weight(self) -> float | None:
        """Conversations of the population this item stands for (1 / inclusion probability),
        or None when the item predates the recorded design."""
        return item_weight(self.inclusion_probability)


class AssignmentStatus(models.TextChoices):
    RESERVED = "reserved", "In progress"
    SUBMITTED = "submitted", "Submitted"
    SKIPPED = "skipped", "Skipped"
    RELEASED = "released", "Released (reservation expired)"


class AssignmentQuerySet(models.QuerySet):
    def counted(self):
        """Submitted, valid and not practice: what agreement figures are computed from."""
        return self.filter(
            status=AssignmentStatus.SUBMITTED, invalidated_at__isnull=True, practice=False
        )

    def open_for(self, user):
        return self.filter(annotator=user, status=AssignmentStatus.RESERVED)


class Assignment(models.Model):
    """One annotator's work on one study item: the reservation, the draft and the submission.

    `slot` is the seat this assignment holds in the item's overlap for its track; a partial
    unique constraint on (item, track, slot) lets the database refuse a ninth annotator racing
    for an item that needs two, on SQLite and PostgreSQL alike. Released, skipped and
    invalidated assignments give their seat back (slot = null); practice assignments of
    unlicensed annotators never take one.
    """

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    track = models.CharField(max_length=20)
    slot = models.PositiveSmallIntegerField(null=True, blank=True)
    practice = models.BooleanField(default=False)  # unlicensed, calibration only: kept apart
    synthetic = models.BooleanField(default=False)  # scripted simulated clinician (demo)
    # Scored elsewhere (on paper, in a spreadsheet) and imported from a file
    # (annotation.services.exchange), not served by the queue: marked on every page and export.
    imported = models.BooleanField(default=False)
    status = models.CharField(
        max_length=20, choices=AssignmentStatus.choices, default=AssignmentStatus.RESERVED
    )
    queue_key = models.CharField(max_length=16)  # per-annotator random order
    reserved_until = models.DateTimeField(null=True, blank=True)
    # The annotation itself: {rubric_id: 1-5}, {rubric_id: text}, {rubric_id: [event ids]};
    # the realism rubrics are rubrics like any other here.
    scores = models.JSONField(default=dict, blank=True)
    feedback = models.JSONField(default=dict, blank=True)
    event_links = models.JSONField(default=dict, blank=True)
    overall_comment = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=0)  # optimistic concurrency between tabs
    seconds_on_task = models.PositiveIntegerField(default=0)
    last_active_at = models.DateTimeField(null=True, blank=True)
    skip_reason = models.CharField(max_length=300, blank=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    saved_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_reason = models.CharField(max_length=500, blank=True)
    invalidated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["item", "annotator"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="one_assignment_per_item"),
            models.UniqueConstraint(
                fields=["item", "track", "slot"],
                condition=Q(slot__isnull=False),
                name="one_annotator_per_seat",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "status"]),
            # Everything the count of an item's taken seats reads (queue._open_items, on every
            # review page, once per item of the study): answered from the index alone, it took
            # half the time it did with a row read per seat in a study of 3,000 items.
            models.Index(fields=["item", "track", "slot", "status", "reserved_until"]),
        ]

    def __str__(self) -> str:
        return str(self.public_id)

    @property
    def is_submitted(self) -> bool:
        return self.status == AssignmentStatus.SUBMITTED

    @property
    def is_invalidated(self) -> bool:
        return self.invalidated_at is not None

    def edit_refusal(self) -> str:
        """Why this annotation cannot change now (skip, save, submit), or "" when it can."""
        if self.item.study.is_locked:
            return "The study is locked; annotations can no longer change."
        if self.is_invalidated:
            return "A researcher invalidated this annotation; it cannot change."
        if self.status == AssignmentStatus.RESERVED:
            return ""
        if self.is_submitted:
            final = self.reopen_refusal()
            return f"Submitted work is read-only. {final or 'You may reopen it to change it.'}"
        return "This item is not in progress; take it from your queue again."

    def reopen_refusal(self) -> str:
        """Why this annotation cannot be reopened now, or "" when it can (see `reopen_refusal`)."""
        return reopen_refusal(
            study=self.item.study, status=self.status, invalidated=self.is_invalidated
        )


def reopen_refusal(*, study: Study, status: str, invalidated: bool) -> str:
    """Why an annotation in this state cannot be reopened, or "" when it can. The one rule the
    reopen service enforces and every page that offers a *Reopen* button asks, so no page
    offers what the service refuses. A calibration round's score is final: submitting shows the
    jury's and peers' scores, and a score changed after seeing them would hide the very
    disagreement the round report exists to show."""
    if status != AssignmentStatus.SUBMITTED:
        return "Only submitted work can be reopened."
    if study.is_locked:
        return "The study is locked, so submitted work is final."
    if invalidated:
        return "A researcher invalidated this annotation, so it cannot be reopened."
    if study.is_calibration:
        return (
            "Final: scores in a calibration round cannot change once the jury's and peers' scores "
            "were shown."
        )
    return ""


class HistoryKind(models.TextChoices):
    SUBMIT = "submit", "Submitted"
    REOPEN = "reopen", "Reopened"
    EDIT = "edit", "Edited after submission"
    CONFLICT = "conflict", "Edit refused: saved from another tab first"
    INVALIDATE = "invalidate", "Invalidated"
    SKIP = "skip", "Skipped"
    RELEASE = "release", "Reservation expired"
    IMPORT = "import", "Imported"
    STAFF_RELEASE = "staff_release", "Reservation released by staff"
    EXTEND = "extend", "Reservation extended"
    REASSIGN = "reassign", "Reassigned"


class AssignmentHistory(models.Model):
    """Who changed what and when; `old` and `new` are snapshots of the annotation fields."""

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="history")
    kind = models.CharField(max_length=20, choices=HistoryKind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    old = models.JSONField(default=dict, blank=True)
    new = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["assignment", "at", "pk"]
        verbose_name_plural = "assignment history"
        indexes = [
            # The queue's "reassigned away from this annotator" reads only these few rows,
            # not every history entry of a study (annotation.services.queue._handed_away).
            models.Index(
                fields=["assignment"], condition=Q(kind="reassign"), name="history_reassigns"
            )
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id} {self.kind} {self.at:%Y-%m-%d %H:%M}"


class CalibrationGuide(models.Model):
    """A guide the researcher publishes after a round; annotators of the project see the latest
    published one in their next rounds and beside the review screen."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="guides")
    after_study = models.ForeignKey(
        Study, on_delete=models.PROTECT, null=True, blank=True, related_name="guides"
    )
    title = models.CharField(max_length=200)
    body_markdown = models.TextField()
    # Items of the round shown as worked examples: [{"item": item id, "note": text}].
    examples = models.JSONField(default=list, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-published_at", "-created_at"]

    def __str__(self) -> str:
        return self.title


class AdjudicationReason(models.TextChoices):
    CLINICIANS = "clinicians", "Clinicians disagree by 2 or more"
    JURY = "jury", "Jury and clinician mean differ by 2 or more"


class Adjudication(models.Model):
    """One (item, rubric) sent to a senior clinician, and their adjudicated score.

    Addressed by its own `public_id` on the senior's pages (never the item's id: items are
    numbered in sampling order, extremes first, which would hint at the jury's score)."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="adjudications")
    rubric_id = models.CharField(max_length=60)
    reason = models.CharField(max_length=20, choices=AdjudicationReason.choices)
    gap = models.FloatField()  # the gap that qualified it, when it was sent
    sent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    sent_at = models.DateTimeField(auto_now_add=True)
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    adjudicated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item", "rubric_id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "rubric_id"], name="one_adjudication"),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=1, score__lte=5),
                name="adjudicated_score_1_to_5",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.rubric_id}"

    @property
    def is_done(self) -> bool:
        return self.adjudicated_at is not None


class NotificationStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    SENT = "sent", "Sent"
    TURNED_OFF = "turned_off", "Not sent: the person turned this kind off"
    UNDELIVERABLE = "undeliverable", "Not sent: no email address or inactive account"
    FAILED = "failed", "Failed after every retry"


class Notification(models.Model):
    """The outbox: one row per (event, recipient), written in the transaction that made the
    event and sent afterwards by a worker (annotation.services.notifications). The unique
    `key` per recipient makes an event notify each person once, however often it is recorded
    or its message delivered."""

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=30)
    key = models.CharField(max_length=120)
    context = models.JSONField(default=dict, blank=True)  # ids the message is rendered from
    status = models.CharField(
        max_length=20, choices=NotificationStatus.choices, default=NotificationStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    # A sender holds the row until then; a row whose sender died is sent again after it.
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = RedactedTextField(blank=True)  # the mail server's words, keys removed

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["recipient", "key"], name="one_notification_per_event")
        ]
        indexes = [models.Index(fields=["status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.kind} to {self.recipient_id} ({self.status})"


class StudyPurge(models.Model):
    """What one purge removed from a study, and the provenance of the figures that stay: the
    counts, the SHA-256 of the removed text, the SHA-256 of each report table just before (the
    tables recomputed afterwards must match), and the export taken before it."""

    study = models.OneToOneField(Study, on_delete=models.PROTECT, related_name="purge")
    at = models.DateTimeField(auto_now_add=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    counts = models.JSONField(default=dict)
    removed_sha256 = models.CharField(max_length=64)
    table_sha256 = models.JSONField(default=dict)
    # {"kind": "archive" | "download", "id": ..., "at": ...}, or {} when forced without one.
    export = models.JSONField(default=dict, blank=True)
    forced_without_export = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"Purge of {self.study} at {self.at:%Y-%m-%d}"
