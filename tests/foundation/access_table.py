"""Which roles may open which page. New URLs must be added here (a test enforces it)."""

from dataclasses import dataclass, field

from accounts.models import Role

STAFF = (Role.RESEARCHER, Role.ADMIN)
ADMIN = (Role.ADMIN,)
EVERYONE = (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN)

# Reachable without login.
PUBLIC = {"login", "logout"}


@dataclass(frozen=True)
class Page:
    name: str
    roles: tuple
    args: tuple = field(default_factory=tuple)  # (kwarg name, object key, attribute)

    def kwargs(self, objects: dict) -> dict:
        return {kwarg: getattr(objects[key], attr) for kwarg, key, attr in self.args}


PAGES = [
    Page("home", EVERYONE),
    Page("people", ADMIN),
]


def build_objects(users_by_role) -> dict:
    """One object of each kind the URLs point at."""
    return {}
