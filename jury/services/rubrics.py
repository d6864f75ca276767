"""Rubric versions: the shipped files loaded once, and new versions researchers write.

The YAML text is the source of truth; jury.engine.rubrics validates it. A new version gets the
next number for its rubric and becomes current; scores keep pointing at the version that
produced them, so editing a rubric never rewrites history.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from django.db import transaction
from django.db.models import Max, Q, QuerySet

from accounts.models import Role
from audit.services import audit_record
from jury.engine.rubrics import RUBRICS_DIR, Rubric, RubricError, parse_rubric
from jury.models import RubricVersion

_VERSION_LINE = re.compile(r"^version:.*$", re.MULTILINE)


@lru_cache(maxsize=128)
def _parsed(yaml_text: str) -> Rubric:
    return parse_rubric(yaml_text)


def rubric_of(version: RubricVersion) -> Rubric:
    """The validated rubric a stored version holds (parsed once per process)."""
    return _parsed(version.yaml_text)


def rubrics_ensure_shipped() -> None:
    """Store every shipped rubric file whose (id, version) is not stored yet."""
    stored = set(RubricVersion.objects.values_list("rubric_id", "version"))
    for path in sorted(RUBRICS_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        rubric = _parsed(text)
        if (rubric.id, rubric.version) not in stored:
            _store(rubric, text, note=f"shipped file {path.name}")


def current_versions(*, judged_only: bool = False) -> list[RubricVersion]:
    """The current version of every rubric, in rubric order."""
    rubrics_ensure_shipped()
    versions = RubricVersion.objects.filter(is_current=True)
    if judged_only:
        versions = versions.filter(kind="dimension")
    return list(versions.order_by("order", "rubric_id"))


def current_weights() -> dict[str, float]:
    """Default jury weights: each judged rubric's weight from its current version."""
    versions = current_versions(judged_only=True)
    return {version.rubric_id: rubric_of(version).weight for version in versions}


def rubrics_visible_to(user) -> QuerySet[RubricVersion]:
    """Researchers and admins see every rubric; an annotator sees the rubrics of their own
    track and the realism rubrics every clinician scores."""
    rubrics_ensure_shipped()
    versions = RubricVersion.objects.all()
    if user.has_role(Role.ANNOTATOR):
        versions = versions.filter(Q(kind="realism") | Q(track=user.track))
    return versions


@transaction.atomic
def rubric_version_create(
    *, rubric_id: str, yaml_text: str, user=None, note: str = ""
) -> RubricVersion:
    """Validate edited YAML and store it as the next version of `rubric_id`.

    The version number is assigned here (previous highest + 1) and written into the text, so
    the stored YAML, the row and every prompt rendered from it agree. RubricError names the
    field at fault.
    """
    previous = RubricVersion.objects.select_for_update().filter(rubric_id=rubric_id)
    current = previous.filter(is_current=True).first()
    if current is None:
        raise RubricError(f"there is no rubric {rubric_id!r} to edit")
    edited, current_rubric = parse_rubric(yaml_text), rubric_of(current)
    _check_same_rubric(edited, current_rubric)
    if replace(edited, version=current.version).fingerprint == current_rubric.fingerprint:
        raise RubricError("nothing changed: the text means the same as the current version")
    number = previous.aggregate(highest=Max("version"))["highest"] + 1
    text = _VERSION_LINE.sub(f"version: {number}", yaml_text, count=1)
    stored = _store(parse_rubric(text), text, note=note, user=user)
    audit_record(
        actor=user,
        action="rubric.version_published",
        target=stored,
        before={"version": current.version, "fingerprint": current.fingerprint},
        after={"version": stored.version, "fingerprint": stored.fingerprint},
        note=note,
    )
    return stored


def _check_same_rubric(edited: Rubric, current: Rubric) -> None:
    for field in ("id", "kind", "code"):
        if getattr(edited, field) != getattr(current, field):
            raise RubricError(
                f"field {field!r} must stay {getattr(current, field)!r}; "
                "create a new rubric file to change it"
            )


def _store(rubric: Rubric, text: str, *, note: str, user=None) -> RubricVersion:
    newest = RubricVersion.objects.filter(rubric_id=rubric.id).aggregate(v=Max("version"))["v"] or 0
    is_current = rubric.version > newest
    if is_current:
        RubricVersion.objects.filter(rubric_id=rubric.id, is_current=True).update(is_current=False)
    version = RubricVersion(
        rubric_id=rubric.id,
        version=rubric.version,
        name=rubric.name,
        code=rubric.code,
        kind=rubric.kind,
        track=rubric.track or "",
        order=rubric.order,
        yaml_text=text,
        fingerprint=rubric.fingerprint,
        is_current=is_current,
        note=note,
        created_by=user,
    )
    version.full_clean()
    version.save()
    return version
