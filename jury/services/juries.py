"""Jury configurations: K judge models, rubric weights, pass threshold and merge mode."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, QuerySet

from audit.services import audit_record, fields_of
from benchmark.models import Conversation
from jury.engine.aggregate import PASS_THRESHOLD
from jury.engine.calibration import Calibration
from jury.models import PART_NAMES, Jury, MergeMode
from jury.services.rubrics import current_versions, current_weights
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string

DEMO_JURY_NAME = "Offline scripted jury"
DEMO_JUDGES = ("offline/standard", "offline/strict")


def judges_parse(text: str) -> list[str]:
    """Judge model strings from text, one per line; ValidationError names the bad line."""
    judges = [line.strip() for line in text.splitlines() if line.strip()]
    if not judges:
        raise ValidationError("Name at least one judge model, one per line.")
    for number, judge in enumerate(judges, start=1):
        try:
            check_model_string(judge, purpose="judge")
        except ProviderError as error:
            raise ValidationError(f"Line {number}: {error}") from error
    if len(set(judges)) != len(judges):
        # The same model twice would answer identically from the cache and would blur the
        # per-judge views, which tell judges apart by model.
        raise ValidationError("Each judge model may appear only once.")
    return judges


def weights_check(weights: Mapping[str, float], rubric_ids: Iterable[str]) -> dict[str, float]:
    """Weights for exactly the judged rubrics: finite, >= 0, at least one positive."""
    expected = set(rubric_ids)
    if set(weights) != expected:
        raise ValidationError(
            f"Give a weight for exactly these rubrics: {', '.join(sorted(expected))}."
        )
    for rubric_id, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValidationError(f"The weight of {rubric_id} must be a number >= 0.")
    if not any(weight > 0 for weight in weights.values()):
        raise ValidationError("At least one rubric needs a positive weight.")
    return {rubric_id: float(weight) for rubric_id, weight in weights.items()}


def jury_create(
    *,
    name: str,
    judges: list[str],
    weights: Mapping[str, float] | None = None,
    pass_threshold: float = PASS_THRESHOLD,
    merge_mode: str = MergeMode.MEAN,
    actor=None,
) -> Jury:
    if not 1 <= pass_threshold <= 5:
        raise ValidationError("The pass threshold must lie between 1 and 5.")
    defaults = current_weights()
    jury = Jury(
        name=name,
        judges=judges_parse("\n".join(judges)),
        weights=weights_check(defaults if weights is None else weights, defaults),
        pass_threshold=pass_threshold,
        merge_mode=merge_mode,
    )
    jury.full_clean()
    jury.save()
    settings = fields_of(jury, "judges", "weights", "pass_threshold", "merge_mode")
    audit_record(actor=actor, action="jury.created", target=jury, after=settings)
    return jury


def jury_demo_ensure() -> Jury:
    """The two-judge offline jury, so the demo site can score a run with no set-up."""
    existing = Jury.objects.filter(name=DEMO_JURY_NAME).first()
    return existing or jury_create(name=DEMO_JURY_NAME, judges=list(DEMO_JUDGES))


# --- versions: a jury calibrated to clinicians -----------------------------------------------

PROMOTED = "promoted"
FOLD = "fold"


@transaction.atomic
def jury_version_create(
    base: Jury,
    calibration: Calibration,
    *,
    learned_from: Mapping,
    purpose: str = PROMOTED,
    note: str = "",
    actor=None,
) -> Jury:
    """A new version of `base`'s family: the same judges, rubric weights, threshold and merge
    mode, with `calibration` applied to every score it gives. `learned_from` names the study
    and the conversations whose clinician scores were used (reports leave those out); a fold
    jury's also carries a unique "label" naming its study and fold."""
    root = base.base or base
    family = Jury.objects.select_for_update().filter(pk=root.pk)
    list(family)  # one version number per family, even when two researchers promote at once
    if purpose == FOLD:
        # A fold jury scores one cross-fitting fold of a study and is not a version: it takes
        # no version number, and its name (unique) says which study and fold it serves.
        number, name = Jury.FOLD_VERSION, f"{root.name} · {learned_from['label']}"
    else:
        number = (Jury.objects.filter(base=root).aggregate(n=Max("version"))["n"] or 1) + 1
        name = f"{root.name} · v{number}"
    jury = Jury(
        name=name,
        judges=list(base.judges),
        weights=dict(base.weights),
        pass_threshold=base.pass_threshold,
        merge_mode=base.merge_mode,
        base=root,
        version=number,
        calibration=calibration.to_dict(),
        learned_from={**learned_from, "purpose": purpose},
        note=note[:300],
    )
    jury.full_clean()
    jury.save()
    if purpose == PROMOTED:
        after = fields_of(jury, "name", "version", "calibration", "learned_from")
        audit_record(actor=actor, action="jury.version_created", target=jury, after=after)
    return jury


def jury_versions(jury: Jury) -> list[Jury]:
    """Every promoted version of the jury's family, oldest first (fold juries left out)."""
    root = jury.base or jury
    versions = [root, *Jury.objects.filter(base=root).order_by("version")]
    return [version for version in versions if not version.is_fold]


def offered_juries() -> QuerySet[Jury]:
    """The juries a researcher may pick to score a run: every version but the fold juries
    (they exist only to cross-fit one fold of a study)."""
    return Jury.objects.exclude(version=Jury.FOLD_VERSION)


def jury_families() -> list[dict]:
    """Each family of juries, newest first: its first version and its promoted versions
    (oldest first); fold juries left out."""
    juries = list(offered_juries().order_by("created_at", "pk"))
    versions: dict[int, list[Jury]] = {}
    for jury in juries:
        if jury.base_id is not None:
            versions.setdefault(jury.base_id, []).append(jury)
    roots = [jury for jury in reversed(juries) if jury.base_id is None]
    return [
        {"root": root, "versions": sorted(versions.get(root.pk, []), key=lambda v: v.version)}
        for root in roots
    ]


def calibration_view(jury: Jury) -> list[dict]:
    """The jury's whole calibration per rubric, as the jury page shows it: judge maps as
    breakpoint tables, weights and intercept, the aggregate map and the examples (with their
    conversations, None for one that no longer exists)."""
    calibration = jury.calibration_data()
    wanted = calibration.example_conversations()
    conversations = Conversation.objects.only("pk", "public_id").in_bulk(wanted)
    names = {version.rubric_id: version.name for version in current_versions()}
    return [
        {
            "rubric_id": rubric_id,
            "name": names.get(rubric_id, rubric_id),
            "parts": [PART_NAMES[part] for part in rubric.parts],
            "judge_maps": [
                {"judge": judge, "points": list(zip(m.x, m.y, strict=True))}
                for judge, m in rubric.judge_maps.items()
            ],
            "weights": list(rubric.weights.items()),
            "intercept": rubric.intercept,
            "aggregate_map": (
                list(zip(rubric.aggregate_map.x, rubric.aggregate_map.y, strict=True))
                if rubric.aggregate_map is not None
                else []
            ),
            "examples": [
                {
                    "conversation": conversations.get(example.conversation_id),
                    "conversation_id": example.conversation_id,
                    "score": example.score,
                    "feedback": example.feedback,
                }
                for example in rubric.examples
            ],
        }
        for rubric_id, rubric in calibration.rubrics.items()
    ]


def learned_conversations(jury: Jury) -> list[Conversation]:
    """The conversations whose clinician scores the jury learned from, in id order."""
    return list(
        Conversation.objects.filter(pk__in=jury.learned_items)
        .only("pk", "public_id")
        .order_by("pk")
    )
