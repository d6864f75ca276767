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

    def clean(self) -> None:
        super().clean()
        if self.role == Role.ANNOTATOR and not self.track:
            raise ValidationError(
                {"track": "An annotator needs a track (clinical or operational)."}
            )
        if self.role != Role.ANNOTATOR and self.track:
            raise ValidationError({"track": "Only annotators have a track."})

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
