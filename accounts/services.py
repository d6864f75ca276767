"""People: the demo users and their roles."""

from django.contrib.auth.password_validation import validate_password

from accounts.models import Role, Track, User

DEMO_PASSWORD = "demo-pass-2026"
DEMO_PEOPLE = [
    ("admin", Role.ADMIN, "", "Ada", "Admin"),
    ("researcher", Role.RESEARCHER, "", "Rosa", "Researcher"),
    ("clinician", Role.ANNOTATOR, Track.CLINICAL, "Carl", "Clinician"),
    ("operations", Role.ANNOTATOR, Track.OPERATIONAL, "Olga", "Operations"),
]


def user_ensure(
    *,
    username: str,
    role: str,
    track: str = "",
    first_name: str = "",
    last_name: str = "",
    password: str,
) -> User:
    user, _ = User.objects.get_or_create(username=username)
    user.role, user.track = role, track
    user.first_name, user.last_name = first_name, last_name
    user.licensed = role == Role.ANNOTATOR
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
        )
        label = user.get_role_display() + (f" ({user.get_track_display()})" if track else "")
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
