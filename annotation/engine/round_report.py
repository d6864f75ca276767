"""The calibration round report: how each annotator scores against the jury and their peers.

Signs: a difference is the annotator's score minus the reference (the jury mean, or the mean
of the other annotators on the same item and rubric), so a positive difference means the
annotator scores higher: more lenient than the reference ("over-scoring").

- Major disagreement: |score - jury mean| >= 2 (the spec's threshold; jury.engine.score_gaps,
  the definition every report uses).
- Tendency per rubric: the mean difference against the jury over at least
  `MIN_SCORES_FOR_TENDENCY` scores; >= +0.5 is over-scoring, <= -0.5 under-scoring (half a
  scale point: a consistent lean, where single one-point differences still average out).

Practice scores (unlicensed annotators) are compared with the jury and with the licensed
annotators on the same item, but never serve as anyone's peers: they are kept apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

from jury.engine.score_gaps import at_least, is_major

TENDENCY_THRESHOLD = 0.5
MIN_SCORES_FOR_TENDENCY = 2


@dataclass(frozen=True)
class Score:
    annotator: str
    assignment: str  # the assignment's public id, for links
    item: int
    rubric: str
    score: int
    practice: bool = False
    synthetic: bool = False
    imported: bool = False  # scored elsewhere, imported from a file


@dataclass(frozen=True)
class Disagreement:
    annotator: str
    assignment: str
    item: int
    rubric: str
    score: int
    jury: float
    imported: bool = False

    @property
    def difference(self) -> float:
        return self.score - self.jury


@dataclass(frozen=True)
class Tendency:
    rubric: str
    scores: int
    mean_difference: float

    @property
    def label(self) -> str:
        if self.scores < MIN_SCORES_FOR_TENDENCY:
            return "too few scores"
        if at_least(self.mean_difference, TENDENCY_THRESHOLD):
            return "over-scores"
        if at_least(-self.mean_difference, TENDENCY_THRESHOLD):
            return "under-scores"
        return "in line"


@dataclass(frozen=True)
class AnnotatorRow:
    annotator: str
    practice: bool
    synthetic: bool
    imported: bool  # any of the scores was imported from a file
    items: int
    scores: int
    vs_jury: float | None
    vs_peers: float | None
    peer_comparisons: int
    major_disagreements: int
    tendencies: tuple[Tendency, ...]


@dataclass(frozen=True)
class RoundReport:
    annotators: tuple[AnnotatorRow, ...]
    practice: tuple[AnnotatorRow, ...]
    disagreements: tuple[Disagreement, ...]  # largest |difference| first


def round_report(scores: Sequence[Score], jury: Mapping[tuple[int, str], float]) -> RoundReport:
    """`jury` maps (item, rubric) to the jury mean; rubrics without one (realism) are compared
    with peers only."""
    counted = defaultdict(list)  # (item, rubric) -> [(annotator, score)] of non-practice scores
    for s in scores:
        if not s.practice:
            counted[(s.item, s.rubric)].append((s.annotator, s.score))
    by_annotator: dict[tuple[str, bool], list[Score]] = defaultdict(list)
    for s in scores:
        by_annotator[(s.annotator, s.practice)].append(s)
    rows = [
        _row(name, practice, own, jury, counted)
        for (name, practice), own in sorted(by_annotator.items())
    ]
    disagreements = sorted(
        (
            Disagreement(
                s.annotator, s.assignment, s.item, s.rubric, s.score, jury[key], s.imported
            )
            for s in scores
            if (key := (s.item, s.rubric)) in jury and is_major(s.score - jury[key])
        ),
        key=lambda d: (-abs(d.difference), d.annotator, d.item, d.rubric),
    )
    return RoundReport(
        annotators=tuple(r for r in rows if not r.practice),
        practice=tuple(r for r in rows if r.practice),
        disagreements=tuple(disagreements),
    )


def _row(name: str, practice: bool, own: list[Score], jury, counted) -> AnnotatorRow:
    jury_diffs = [
        (s.rubric, s.score - jury[(s.item, s.rubric)]) for s in own if (s.item, s.rubric) in jury
    ]
    peer_diffs = []
    for s in own:
        peers = [score for who, score in counted[(s.item, s.rubric)] if who != name]
        if peers:
            peer_diffs.append(s.score - fmean(peers))
    per_rubric: dict[str, list[float]] = defaultdict(list)
    for rubric, diff in jury_diffs:
        per_rubric[rubric].append(diff)
    return AnnotatorRow(
        annotator=name,
        practice=practice,
        synthetic=any(s.synthetic for s in own),
        imported=any(s.imported for s in own),
        items=len({s.item for s in own}),
        scores=len(own),
        vs_jury=fmean(d for _, d in jury_diffs) if jury_diffs else None,
        vs_peers=fmean(peer_diffs) if peer_diffs else None,
        peer_comparisons=len(peer_diffs),
        major_disagreements=sum(1 for _, d in jury_diffs if is_major(d)),
        tendencies=tuple(
            Tendency(rubric, len(diffs), fmean(diffs))
            for rubric, diffs in sorted(per_rubric.items())
        ),
    )
