"""A study's second phase: conversations added where the judges disagree or the verdict is
close, each with a known chance of being drawn (annotation.engine.second_phase), so the
population-weighted figures stay valid once they are scored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.engine.sampling import Candidate, inclusion_probability
from annotation.engine.second_phase import (
    DEFAULT_FLOOR,
    Teaching,
    combined_probability,
    pps_systematic,
    teaching,
)
from annotation.models import Study, StudyItem, StudyKind, StudyStatus
from annotation.services.studies import study_candidates
from audit.services import audit_record
from jury.models import JudgeScore, ScoreStatus

MAX_DRAWS = 2000


@dataclass(frozen=True)
class SecondPhaseSpec:
    draws: int
    seed: int = 0
    spread_weight: float = 1.0  # how much the judges' disagreement counts
    nearness_weight: float = 1.0  # how much a jury mean near the pass threshold counts
    floor: float = DEFAULT_FLOOR


@transaction.atomic
def study_second_phase(study: Study, *, spec: SecondPhaseSpec, actor=None) -> list[StudyItem]:
    """Add `spec.draws` conversations to an open target study and re-weight every item by
    its chance of entering through either phase; refuses what would break the design."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _check(study, spec)
    judged = [v.rubric_id for v in study.rubric_versions.all() if v.kind == "dimension"]
    candidates = {
        c.conversation_id: c for c in study_candidates(study, study.scoring_jobs.all(), judged)
    }
    taken = set(study.items.values_list("conversation_id", flat=True))
    eligible = [cid for cid in candidates if cid not in taken]
    if not eligible:
        raise ValidationError("Every conversation the study could draw is in it already.")
    sizes = _sizes(study, candidates, spec)
    design = pps_systematic(
        {cid: sizes[cid][0] for cid in eligible}, draws=spec.draws, seed=spec.seed
    )
    first = _first_phase(study)
    added = _add_items(study, design.chosen, candidates, sizes, design, first)
    _reweigh_first_phase(study, candidates, sizes, design)
    study.coverage = {**study.coverage, "second_phase": _record(spec, eligible, design, added)}
    study.save(update_fields=["coverage"])
    audit_record(
        actor=actor, action="study.second_phase", target=study,
        after={"added": len(added), "seed": spec.seed, "pool": len(eligible)},
    )  # fmt: skip
    return added


def _check(study: Study, spec: SecondPhaseSpec) -> None:
    if study.kind != StudyKind.TARGET:
        raise ValidationError(
            "A second phase is for target studies (calibration rounds are fresh)."
        )
    if study.status != StudyStatus.OPEN:
        raise ValidationError("The study is locked: it takes no more conversations.")
    if "second_phase" in (study.coverage or {}):
        raise ValidationError("This study has had its second phase already.")
    if not study.items.exists() or study.items.filter(inclusion_probability=None).exists():
        raise ValidationError(
            "The study's first sample was drawn before inclusion probabilities were recorded, "
            "so a second phase could not be weighted with it."
        )
    if not 1 <= spec.draws <= MAX_DRAWS:
        raise ValidationError(f"Add between 1 and {MAX_DRAWS} conversations.")
    if spec.spread_weight < 0 or spec.nearness_weight < 0 or spec.floor <= 0:
        raise ValidationError("Weights must be zero or more and the floor above zero.")
    if spec.spread_weight == spec.nearness_weight == 0:
        raise ValidationError("Give judge disagreement or nearness to the threshold some weight.")


def _sizes(study: Study, candidates, spec) -> dict[int, tuple[float, Teaching]]:
    """Every candidate's size and what gave it, from its judges' valid scores and its jury
    means (against the pass threshold of the jury that scored it first)."""
    judged = {r for c in candidates.values() for r in c.scores}
    scores: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = JudgeScore.objects.filter(
        job__in=study.scoring_jobs.all(), conversation_id__in=list(candidates),
        status=ScoreStatus.VALID, rubric_version__rubric_id__in=judged,
    ).values_list("conversation_id", "rubric_version__rubric_id", "score")  # fmt: skip
    for conversation_id, rubric_id, score in rows:
        scores[conversation_id][rubric_id].append(score)
    threshold = _threshold(study)
    sizes = {}
    for cid, candidate in candidates.items():
        why = teaching(scores.get(cid, {}), candidate.scores, threshold=threshold)
        size = why.size(
            floor=spec.floor, spread_weight=spec.spread_weight, nearness_weight=spec.nearness_weight
        )
        sizes[cid] = (size, why)
    return sizes


def _threshold(study: Study) -> float:
    job = study.scoring_jobs.select_related("jury").order_by("pk").first()
    return job.jury.pass_threshold if job else 3.0


def _first_phase(study: Study):
    """The first phase's chance for any candidate, from the draws it recorded."""
    cells = study.coverage.get("cells") or []
    available = Counter({(c["model"], c["rubric"], c["bin"]): c["available"] for c in cells})
    drawn = Counter({(c["model"], c["rubric"], c["bin"]): c.get("drawn", 0) for c in cells})

    def first(candidate: Candidate) -> float:
        return inclusion_probability(candidate.cells(), available=available, drawn=drawn)

    return first


def _add_items(study, chosen, candidates, sizes, design, first) -> list[StudyItem]:
    start = (study.items.aggregate(last=Max("position"))["last"] or -1) + 1
    items = []
    for offset, cid in enumerate(chosen):
        candidate, (size, why) = candidates[cid], sizes[cid]
        rubric = why.rubric or next(iter(sorted(candidate.scores)))
        items.append(StudyItem(
            study=study, conversation_id=cid, position=start + offset, phase=2,
            stratum={"model": candidate.model, "rubric": rubric,
                     "bin": candidate.bins()[rubric], "phase": 2},
            jury_bins=candidate.bins(),
            inclusion_probability=combined_probability(first(candidate), design.probability(size)),
        ))  # fmt: skip
    return StudyItem.objects.bulk_create(items)


def _reweigh_first_phase(study, candidates, sizes, design) -> None:
    """A first-phase item could also have entered through the second phase: its chance is the
    union of its recorded first-phase chance and the second phase's."""
    changed = []
    for item in study.items.filter(phase=1):
        candidate = candidates.get(item.conversation_id)
        if candidate is None:  # no longer scored completely: keep its first-phase chance
            continue
        size, _ = sizes[item.conversation_id]
        item.inclusion_probability = combined_probability(
            item.inclusion_probability, design.probability(size)
        )
        changed.append(item)
    StudyItem.objects.bulk_update(changed, ["inclusion_probability"])


def _record(spec: SecondPhaseSpec, eligible, design, added) -> dict:
    return {
        "added": len(added),
        "pool": len(eligible),
        "seed": spec.seed,
        "spread_weight": spec.spread_weight,
        "nearness_weight": spec.nearness_weight,
        "floor": spec.floor,
        "scale": design.scale,
        "at": timezone.now().isoformat(),
    }
