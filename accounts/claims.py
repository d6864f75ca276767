"""What the identity provider's claim says about a person (pure: no Django).

The claim named by SSO_ROLE_CLAIM holds a list of words (Keycloak's role and group mappers and
Entra ID's app roles give a list; a single string, comma- or space-separated, is read the same
way). Words the site does not know are ignored, so the claim may be shared with other
applications; with SSO_CLAIM_PREFIX set (e.g. "carejury-"), only words with that prefix count.

    admin, researcher, annotator-clinical, annotator-operational: the role (the highest wins)
    licensed: a licensed clinician (annotators)
    senior: a senior clinician (annotators; implies licensed)
    project:<name>: enrolled in that project (annotators)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ROLE_ORDER = ("annotator-operational", "annotator-clinical", "researcher", "admin")
PROJECT = "project:"


@dataclass(frozen=True)
class Grants:
    """What the claim grants; `role` is None when the claim names no role."""

    role: str | None = None
    track: str = ""
    licensed: bool = False
    senior: bool = False
    projects: tuple[str, ...] = field(default_factory=tuple)


def claim_words(value, *, prefix: str = "") -> list[str]:
    """The claim's words, prefix removed, of those that carry it."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else re.split(r"[,\s]+", str(value))
    words = [str(item).strip() for item in items if str(item).strip()]
    if prefix:
        words = [word[len(prefix) :] for word in words if word.startswith(prefix)]
    return words


def claim_grants(value, *, prefix: str = "", default_role: str = "") -> Grants:
    words = claim_words(value, prefix=prefix)
    roles = [word.lower() for word in words if word.lower() in ROLE_ORDER]
    role_value = max(roles, key=ROLE_ORDER.index) if roles else default_role or None
    projects = tuple(word[len(PROJECT) :].strip() for word in words if word.startswith(PROJECT))
    if role_value is None:
        return Grants(projects=projects)
    role, _, track = role_value.partition("-")
    flags = {word.lower() for word in words}
    annotator = role == "annotator"
    senior = annotator and "senior" in flags
    return Grants(
        role=role,
        track=track,
        licensed=annotator and ("licensed" in flags or senior),
        senior=senior,
        projects=tuple(name for name in projects if name),
    )
