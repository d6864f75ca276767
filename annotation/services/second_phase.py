"""A study's second phase: conversations added where the judges disagree or the verdict is
close, each with a known chance of being drawn (annotation.engine.second_phase), so the
population-weighted figures stay valid once they are scored.

The second phase draws over the same population as the first (every conversation the study
could draw, its own items included) and needs the first phase's exact design to combine the two
chances; a study drawn by the earlier greedy sampler, or whose pool of conversations has changed
since, is refused with the reason.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.engine.sampling import Design, home_cell
from annotation.engine.second_phase import (
    DEFAULT_FLOOR,
    SecondPhase,
    Teaching,
    combined_probability,
    second_phase_draw,
    teaching,
)
from annotation.models import Study, StudyItem, StudyKind, StudyStatus
from annotation.services.studies import item_stratum, study_candidates
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
    """Draw `spec.draws` conversations over the study's population, add those not in it yet to
    an open target study and re-weight every item by its chance of entering through either
    phase; refuses what would break the design."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _check(study, spec)
    first = Design.from_coverage(study.coverage)
    judged = [v.rubric_id for v in study.rubric_versions.all() if v.kind == "dimension"]
    candidates = {
        c.conversation_id: c for c in study_candidates(study, study.scoring_jobs.all(), judged)
    }
    _check_population(first, candidates)
    taken = set(study.items.values_list("conversation_id", flat=True))
    if not set(candidates) - taken:
        raise ValidationError("Every conversation the study could draw is in it already.")
    sizes = _sizes(study, candidates, spec)
    design = second_phase_draw(
        {cid: size for cid, (size, _) in sizes.items()},
        taken=taken,
        draws=spec.draws,
        seed=spec.seed,
    )
    added = _add_items(study, candidates, sizes, design, first)
    _reweigh_first_phase(study, candidates, sizes, design, first)
    study.coverage = {**study.coverage, "second_phase": _record(spec, candidates, design)}
    study.save(update_fields=["coverage"])
    audit_record(
        actor=actor,
        action="study.second_phase",
        target=study,
        after={"added": len(added), "seed": spec.seed, "pool": len(candidates)},
    )
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
    if not study.items.exists() or Design.from_coverage(study.coverage or {}) is None:
        raise ValidationError(
            "This study was drawn before the sampler recorded an exact design (its chances "
            "are approximate or unknown), so a second phase could not be weighted with it. "
            "Draw a new study to add a second phase."
        )
    if not 1 <= spec.draws <= MAX_DRAWS:
        raise ValidationError(f"Add between 1 and {MAX_DRAWS} conversations.")
    if spec.spread_weight < 0 or spec.nearness_weight < 0 or spec.floor <= 0:
        raise ValidationError("Weights must be zero or more and the floor above zero.")
    if spec.spread_weight == spec.nearness_weight == 0:
        raise ValidationError("Give judge disagreement or nearness to the threshold some weight.")


def _check_population(first: Design, candidates: dict) -> None:
    """The first phase's chances hold for the population it was drawn from: the second phase
    must draw from the same conversations."""
    today = Counter(cell for candidate in candidates.values() for cell in candidate.cells())
    recorded = {cell: n for cell, n in first.available.items() if n}
    if dict(today) != recorded:
        raise ValidationError(
            "The conversations this study could draw from have changed since its sample was "
            "drawn (another study holds some out now, or jury results were added or removed), "
            "so the first sample's chances no longer hold for them and a second phase would "
            "mix two populations."
        )


def _sizes(study: Study, candidates, spec) -> dict[int, tuple[float, Teaching]]:
    """Every candidate's size and what gave it, from its judges' valid scores and its jury
    means (against the pass threshold of the jury that scored it first)."""
    judged = {r for c in candidates.values() for r in c.scores}
    scores: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = JudgeScore.objects.filter(
        job__in=study.scoring_jobs.all(),
        conversation_id__in=list(candidates),
        status=ScoreStatus.VALID,
        rubric_version__rubric_id__in=judged,
    ).values_list("conversation_id", "rubric_version__rubric_id", "score")
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


def _add_items(study, candidates, sizes, design: SecondPhase, first: Design) -> list[StudyItem]:
    start = (study.items.aggregate(last=Max("position"))["last"] or -1) + 1
    items = []
    for offset, cid in enumerate(design.added):
        candidate, (size, _) = candidates[cid], sizes[cid]
        stratum = first.stratum_of(candidate)
        home = home_cell(candidate.cells(), first.available)
        items.append(
            StudyItem(
                study=study,
                conversation_id=cid,
                position=start + offset,
                phase=2,
                stratum=item_stratum(stratum.key, home) | {"phase": 2},
                jury_bins=candidate.bins(),
                inclusion_probability=combined_probability(
                    stratum.probability, design.probability(size)
                ),
            )
        )
    return StudyItem.objects.bulk_create(items)


def _reweigh_first_phase(study, candidates, sizes, design: SecondPhase, first: Design) -> None:
    """A first-phase item could also have entered through the second phase: its chance is the
    union of the two independent phases' chances."""
    changed = []
    for item in study.items.filter(phase=1):
        size, _ = sizes[item.conversation_id]
        item.inclusion_probability = combined_probability(
            first.probability(candidates[item.conversation_id]), design.probability(size)
        )
        changed.append(item)
    StudyItem.objects.bulk_update(changed, ["inclusion_probability"])


def _record(spec: SecondPhaseSpec, candidates, design: SecondPhase) -> dict:
    return {
        "added": len(design.added),
        "draws": len(design.chosen),
        "already_in": len(design.chosen) - len(design.added),
        "pool": len(candidates),
        "seed": spec.seed,
        "spread_weight": spec.spread_weight,
        "nearness_weight": spec.nearness_weight,
        "floor": spec.floor,
        "scale": design.scale,
        "at": timezone.now().isoformat(),
    }
