"""A study's sampling design as the alignment engine reads it: each item's weight and its
stratum, and the population's jury scores per model and rubric.

Where it comes from (`StudyDesign.source`):
- recorded, exact: a study drawn by the stratified sampler (annotation.engine.sampling; its
  coverage holds the `design`): each item carries its inclusion probability n_h / N_h and its
  design stratum, which is every figure's stratum for the bootstrap and the design variance;
- recorded by the earlier greedy sampler: a study drawn before that design kept the
  probabilities that sampler wrote down, which were not its real chances (it chose
  conversations by how many short cells they filled). They are used as recorded - nothing can
  recompute the real ones - and the source says they are approximate; each rubric's figure
  uses the conversation's cell of that rubric as its stratum, as it did;
- reconstructed: a study (or an archive) from before any design was recorded kept each cell's
  size N_h in its coverage and each item's drawn cell; the draws per cell are counted from the
  items, each item's jury bins read back from the jury results the sample was drawn from
  (annotation.services.studies.study_candidates) and the greedy sampler's formula applied, as
  approximate as above. The population's jury scores come from the same candidates only if
  their count in every cell still equals the recorded N_h: otherwise the pool has changed since
  (a later study holds conversations out, an archive holds only the study's own
  conversations) and the clinician-corrected scores say so;
- none: without coverage or drawn cells (items created outside the sampler) there are no
  weights, and every page shows the sample's figures only, with the reason.

Calibration rounds are drawn by the same sampler from the conversations still free for them,
so their weights describe that pool (what the round could have drawn), like a target study's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from alignment.engine.frames import ITEM, RUBRIC, STRATUM, WEIGHT
from alignment.engine.ppi import Population
from alignment.services.frames import RubricInfo
from annotation.engine.sampling import (
    cell_label,
    greedy_inclusion_probability,
    item_weight,
)
from annotation.models import Study
from annotation.services.studies import study_candidates
from common.json_columns import json_as_text, json_values

RECORDED = "recorded when the sample was drawn (stratified random sampling: exact)"
APPROXIMATE = (
    "; approximate: the study was drawn by the earlier greedy sampler, whose recorded chances "
    "were not the ones it drew with (draw a new study for exact weights)"
)
RECORDED_GREEDY = "recorded when the sample was drawn" + APPROXIMATE
RECONSTRUCTED = "reconstructed from the study's recorded coverage" + APPROXIMATE


@dataclass(frozen=True)
class StudyDesign:
    weights: dict[int, float] = field(default_factory=dict)  # conversation -> 1 / pi
    bins: dict[int, dict[str, int]] = field(default_factory=dict)  # conversation -> rubric bin
    drawn_cell: dict[int, str] = field(default_factory=dict)  # conversation -> its sampled cell
    strata: dict[int, str] = field(default_factory=dict)  # conversation -> design stratum (exact)
    models: dict[int, str] = field(default_factory=dict)  # conversation -> model label
    source: str = ""
    reason: str = ""  # why there are no weights ("" when there are)
    population: dict[tuple[str, str], Population] = field(default_factory=dict)
    population_reason: str = ""  # why the population's jury scores are unknown

    @property
    def weighted(self) -> bool:
        return bool(self.weights) and not self.reason

    def stratum(self, item: int, rubric: RubricInfo) -> str:
        """The item's stratum for this rubric's figures: its design stratum in an exact design.
        In an older study's: model x that rubric's jury bin; for a rubric the jury does not
        score (realism), the cell the item was drawn for."""
        if item in self.strata:
            return self.strata[item]
        if rubric.judged and rubric.rubric_id in self.bins.get(item, {}):
            return f"{self.models[item]} | jury {self.bins[item][rubric.rubric_id]}"
        return self.drawn_cell.get(item, "")

    def design_long(self, rubrics: list[RubricInfo]) -> pd.DataFrame:
        """ITEM, RUBRIC, WEIGHT, STRATUM for every item and rubric (engine design table)."""
        rows = [
            (item, rubric.rubric_id, weight, self.stratum(item, rubric))
            for rubric in rubrics
            for item, weight in sorted(self.weights.items())
        ]
        return pd.DataFrame(rows, columns=[ITEM, RUBRIC, WEIGHT, STRATUM])


def study_design(study: Study) -> StudyDesign:
    items = _design_rows(study)
    if not items:
        return StudyDesign(reason="the study has no items")
    models = {item: label for item, label, *_ in items}
    drawn_cell = {item: _cell_label(stratum) for item, _, stratum, *_ in items}
    coverage = study.coverage or {}
    if all(probability is not None and bins for *_, bins, probability in items):
        weights = {item: item_weight(p) for item, *_, p in items}
        bins = {item: dict(b) for item, _, _, b, _ in items}
        population, missing = _recorded_population(coverage)
        exact = "design" in coverage
        strata = {item: stratum["key"] for item, _, stratum, *_ in items} if exact else {}
        source = RECORDED if exact else RECORDED_GREEDY
        return _checked(
            StudyDesign(weights, bins, drawn_cell, strata, models, source, "", population, missing)
        )
    return _reconstructed(study, items, coverage, models, drawn_cell)


def _design_rows(study: Study) -> list[tuple]:
    """Per item in position order: conversation, model label, stratum, jury bins, inclusion
    probability. The two JSON columns are read as text and decoded in one call (json_columns):
    6,000 decodings of their own were most of this read in a 3,000-item study."""
    rows = list(
        study.items.order_by("position")
        .annotate(stratum_json=json_as_text("stratum"), bins_json=json_as_text("jury_bins"))
        .values_list(
            "conversation_id",
            "conversation__run_agent__label",
            "stratum_json",
            "bins_json",
            "inclusion_probability",
        )
    )
    decoded = json_values(text for row in rows for text in row[2:4])
    return [
        (item, label, decoded[2 * i], decoded[2 * i + 1], probability)
        for i, (item, label, _, _, probability) in enumerate(rows)
    ]


def _checked(design: StudyDesign) -> StudyDesign:
    if any(weight is None for weight in design.weights.values()):
        reason = "an item's inclusion probability is zero, which the sampler cannot produce"
        return StudyDesign(models=design.models, reason=reason)
    return design


def _cell_label(stratum: dict) -> str:
    if not stratum:
        return ""
    return cell_label((stratum.get("model"), stratum.get("rubric"), stratum.get("bin")))


def _recorded_population(coverage: dict) -> tuple[dict, str]:
    cells = coverage.get("cells") or []
    if not cells or any("jury_sum" not in cell for cell in cells):
        return {}, (
            "the population's jury scores were not recorded when this study was drawn (it "
            "predates them), and they could not be read back"
        )
    totals: dict[tuple[str, str], list] = {}
    for cell in cells:
        total = totals.setdefault((cell["model"], cell["rubric"]), [0, 0.0, 0.0, 0])
        total[0] += cell["available"]
        total[1] += cell["jury_sum"]
        total[2] += cell["jury_squares"]
        total[3] += cell["passed"]
    return {key: Population(*values) for key, values in totals.items()}, ""


def _reconstructed(study: Study, items, coverage: dict, models, drawn_cell) -> StudyDesign:
    cells = coverage.get("cells") or []
    strata = [stratum for _, _, stratum, *_ in items]
    if not cells or not all(strata):
        reason = (
            "the study records no sampling coverage"
            if not cells
            else "some items do not record the cell they were drawn for"
        )
        return StudyDesign(models=models, reason=reason)
    available = {(c["model"], c["rubric"], c["bin"]): c["available"] for c in cells}
    drawn = Counter((s["model"], s["rubric"], s["bin"]) for s in strata)
    rubrics = list(coverage.get("rubrics") or sorted({rubric for _, rubric, _ in available}))
    drawable = study_candidates(study, list(study.scoring_jobs.all()), rubrics)
    candidates = {candidate.conversation_id: candidate for candidate in drawable}
    lost = [item for item, *_ in items if item not in candidates]
    if lost:
        reason = (
            f"the jury results {len(lost)} item(s) were drawn from are no longer "
            "complete, so their cells cannot be read back"
        )
        return StudyDesign(models=models, reason=reason)
    weights, bins = {}, {}
    for item, *_ in items:
        candidate = candidates[item]
        bins[item] = candidate.bins()
        weights[item] = item_weight(
            greedy_inclusion_probability(candidate.cells(), available=available, drawn=drawn)
        )
    population, missing = _candidate_population(candidates.values(), available)
    return _checked(
        StudyDesign(weights, bins, drawn_cell, {}, models, RECONSTRUCTED, "", population, missing)
    )


def _candidate_population(candidates, available: dict) -> tuple[dict, str]:
    """The population from today's candidates, if it is still the pool the study drew from."""
    counts = Counter(cell for candidate in candidates for cell in candidate.cells())
    recorded = {cell: n for cell, n in available.items() if n}
    if dict(counts) != recorded:
        return {}, (
            "the population's jury scores were not recorded when this study was drawn, and the "
            "conversations it could draw from are no longer the same (another study holds some "
            "out, or an archive holds only the study's own)"
        )
    totals: dict[tuple[str, str], list] = {}
    for candidate in candidates:
        for model, rubric, _ in candidate.cells():
            total = totals.setdefault((model, rubric), [0, 0.0, 0.0, 0])
            score = candidate.scores[rubric]
            total[0] += 1
            total[1] += score
            total[2] += score * score
            total[3] += int(candidate.passes.get(rubric, False))
    return {key: Population(*values) for key, values in totals.items()}, ""
