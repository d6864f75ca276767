from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import models


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Admin"


class Track(models.TextChoices):
    CLINICAL = "clinical", "Clinical"
    OPERATIONAL = "operational", "Operational"


class AccountOrigin(models.TextChoices):
    SITE = "site", "Made on this site"
    STUDY_ARCHIVE = "study_archive", "Imported with a study archive"
    ANNOTATION_FILE = "annotation_file", "Imported with an annotation file"


class Theme(models.TextChoices):
    SYSTEM = "system", "As the system"
    LIGHT = "light", "Light"
    DARK = "dark", "Dark"


class TextSize(models.TextChoices):
    SMALL = "small", "Small"
    MEDIUM = "medium", "Medium"
    LARGE = "large", "Large"
    LARGEST = "largest", "Largest"


class NotificationKind(models.TextChoices):
    """What people are told by email (sent by annotation.services.notifications); each person
    may turn any of them off (`User.notifications_off`)."""

    ENROLLED = "enrolled", "You were enrolled in a project"
    STUDY_OPENED = "study_opened", "A study opened for you"
    GUIDE_PUBLISHED = "guide_published", "A calibration guide was published for your project"
    ITEM_REOPENED = "item_reopened", "A researcher reopened one of your items"
    ITEM_REASSIGNED = "item_reassigned", "An item was reassigned to you"
    DEADLINE_SOON = "deadline_soon", "A study's deadline is two days away"
    ADJUDICATION_WAITING = "adjudication_waiting", "An item waits for adjudication (seniors)"


class User(AbstractUser):
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.RESEARCHER)
    # Annotators only: which rubrics they score, and whether they hold a clinical licence.
    track = models.CharField(max_length=20, choices=Track.choices, blank=True)
    licensed = models.BooleanField(default=False)
    # Accounts an import creates are records of who did imported work (inactive, no password),
    # not people of this site: the People page lists them apart, and an annotation import
    # may attribute work to them without the confirmation a real person's account needs.
    origin = models.CharField(
        max_length=20, choices=AccountOrigin.choices, default=AccountOrigin.SITE
    )
    # How the site looks for this person, on every machine they log in from (a clinician
    # scoring all day moves between ward computers): light, dark or the system's setting,
    # and the size of the text.
    theme = models.CharField(max_length=10, choices=Theme.choices, default=Theme.SYSTEM)
    text_size = models.CharField(max_length=10, choices=TextSize.choices, default=TextSize.MEDIUM)
    # A senior clinician adjudicates major disagreements (annotation.services.adjudication).
    senior = models.BooleanField(
        default=False, help_text="Senior clinician: may adjudicate major disagreements."
    )
    # Notification kinds (annotation.services.notifications.KINDS) this person turned off.
    notifications_off = models.JSONField(default=list, blank=True)

    def clean(self) -> None:
        super().clean()
        if self.role == Role.ANNOTATOR and not self.track:
            raise ValidationError(
                {"track": "An annotator needs a track (clinical or operational)."}
            )
        if self.role != Role.ANNOTATOR and self.track:
            raise ValidationError({"track": "Only annotators have a track."})
        if self.senior and not (self.role == Role.ANNOTATOR and self.licensed):
            raise ValidationError(
                {"senior": "Only a licensed annotator can be a senior clinician."}
            )
        unknown = set(self.notifications_off) - set(NotificationKind.values)
        if unknown:
            raise ValidationError(
                {"notifications_off": f"Unknown notification kinds: {', '.join(sorted(unknown))}."}
            )

    def save(self, *args, **kwargs) -> None:
        # The role is the one source of truth: Django's staff and superuser flags follow it, so
        # demoting an admin in the admin site really removes their access. `createsuperuser`
        # creates an admin.
        if self._state.adding and self.is_superuser:
            self.role = Role.ADMIN
        self.is_staff = self.is_superuser = self.role == Role.ADMIN
        super().save(*args, **kwargs)

    @property
    def is_imported(self) -> bool:
        return self.origin != AccountOrigin.SITE

    @property
    def effective_role(self) -> str:
        return self.role

    def has_role(self, *roles: str) -> bool:
        return self.effective_role in roles

    def wants(self, kind: str) -> bool:
        """Whether this person wants notifications of `kind` (none are off by default)."""
        return kind not in self.notifications_off


class TokenScope(models.TextChoices):
    READ = "read", "Read: lists, status, tables, exports"
    WRITE = "write", "Read and write: also launch, control and import"


class ApiToken(models.Model):
    """A staff member's personal access token for the JSON API. Only the SHA-256 digest of the
    token is kept (tokens are 256 random bits: a fast hash is enough, and no one can read a
    token back from the database); `prefix` is its first characters, shown so people can tell
    their tokens apart."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What it is for, e.g. the nightly script.")
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=10, choices=TokenScope.choices, default=TokenScope.READ)
    requests_per_minute = models.PositiveIntegerField(default=120)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
