"""People: the demo users and their roles, and accounts managed on the People page."""

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import Role, Track, User
from accounts.signals import account_deactivated
from audit.services import audit_record, fields_of

DEMO_PASSWORD = "demo-pass-2026"
DEMO_PEOPLE = [
    ("admin", Role.ADMIN, "", "Ada", "Admin"),
    ("researcher", Role.RESEARCHER, "", "Rosa", "Researcher"),
    ("clinician", Role.ANNOTATOR, Track.CLINICAL, "Carl", "Clinician"),
    ("operations", Role.ANNOTATOR, Track.OPERATIONAL, "Olga", "Operations"),
]
DEMO_SENIOR = "clinician"  # adjudicates the demo's major disagreement
DEMO_MAIL_DOMAIN = "example.org"  # reserved for examples: nothing is ever delivered there


def user_ensure(
    *,
    username: str,
    role: str,
    track: str = "",
    first_name: str = "",
    last_name: str = "",
    password: str,
    senior: bool = False,
) -> User:
    user, _ = User.objects.get_or_create(username=username)
    user.role, user.track = role, track
    user.first_name, user.last_name = first_name, last_name
    user.email = f"{username}@{DEMO_MAIL_DOMAIN}"
    user.licensed = role == Role.ANNOTATOR
    user.senior = senior
    validate_password(password, user)  # the demo's people follow the site's password rules
    user.set_password(password)
    user.full_clean()
    user.save()
    return user


def demo_people_ensure() -> list[tuple[str, str, str]]:
    """Create (or reset) the demo users; returns (username, password, role label) rows."""
    rows = []
    for username, role, track, first, last in DEMO_PEOPLE:
        user = user_ensure(
            username=username,
            role=role,
            track=track,
            first_name=first,
            last_name=last,
            password=DEMO_PASSWORD,
            senior=username == DEMO_SENIOR,
        )
        label = user.get_role_display() + (f" ({user.get_track_display()})" if track else "")
        label += ", senior" if user.senior else ""
        rows.append((username, DEMO_PASSWORD, label))
    return rows


def display_preferences_set(*, user: User, theme: str = "", text_size: str = "") -> User:
    """Keep how the site looks for this person; a blank value leaves that setting as it is."""
    changed = {name: value for name, value in (("theme", theme), ("text_size", text_size)) if value}
    for name, value in changed.items():
        setattr(user, name, value)
    if changed:
        user.full_clean(exclude=[f.name for f in User._meta.fields if f.name not in changed])
        user.save(update_fields=list(changed))
    return user


# --- managing people (the People page) ------------------------------------------------------

PERSON_FIELDS = (
    "first_name",
    "last_name",
    "email",
    "role",
    "track",
    "licensed",
    "senior",
    "is_active",
)


def person_save(
    person: User, *, changes: dict, password: str = "", actor, creating: bool = False
) -> User:
    """Create or change an account from the People page, audited (`person.created`,
    `person.changed`, with every changed field before and after; a new password is recorded
    as set, never its value). An admin cannot lock themselves out: their own account keeps
    its admin role and stays active. Deactivating an annotator gives back the seats of their
    reservations (annotation.services.moves)."""
    if person.is_imported:
        raise ValidationError(
            "Imported accounts are records of imported work; create a site account instead."
        )
    before = {} if creating else fields_of(User.objects.get(pk=person.pk), *PERSON_FIELDS)
    for name, value in changes.items():
        setattr(person, name, value)
    if person.role != Role.ANNOTATOR:
        person.track, person.licensed, person.senior = "", False, False
    _keep_own_access(person, actor)
    if password:
        validate_password(password, person)
        person.set_password(password)
    elif creating:
        person.set_unusable_password()  # until an admin sets one
    person.full_clean()
    with transaction.atomic():
        person.save()
        after = fields_of(person, *PERSON_FIELDS)
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        if creating or changed or password:
            audit_record(
                actor=actor,
                action="person.created" if creating else "person.changed",
                target=person,
                before={k: before[k] for k in changed if k in before},
                after=changed | ({"password": "set"} if password else {}),
            )
        if before.get("is_active") and not person.is_active:
            held_work_release(person, actor=actor)
    return person


def _keep_own_access(person: User, actor) -> None:
    if actor is None or person.pk != actor.pk:
        return
    if not person.is_active or person.role != Role.ADMIN:
        raise ValidationError(
            "You cannot deactivate your own account or give up your own admin role; ask "
            "another admin."
        )


def held_work_release(person: User, *, actor) -> None:
    """A person's account was deactivated: the apps that hold work of theirs give it back
    (annotation: their reserved seats; their drafts stay in the history)."""
    account_deactivated.send(sender=User, person=person, actor=actor)


def notification_settings_save(person: User, *, off: list[str]) -> User:
    person.notifications_off = sorted(set(off))
    person.full_clean(validate_unique=False)
    person.save(update_fields=["notifications_off"])
    return person
