"""The disagreement report: conversations ranked by |jury - mean clinician|, each with every
judge's score and explanation beside every clinician's score, feedback and the trace events the
feedback points at, and its adjudication when a senior clinician settled it. Counting follows
alignment.services.frames (synthetic work only when included; practice and invalidated work
never)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from alignment.engine.frames import ITEM, JUDGE, JURY, RUBRIC
from alignment.services import themes
from alignment.services.adjudicated import adjudications_by_key
from alignment.services.frames import StudyFrames, judge_explanations, study_frames
from alignment.services.reports import ReportFilters, ranked_disagreements
from alignment.services.trend import project_rounds, round_label
from annotation.models import Assignment, Study
from benchmark.models import TraceEvent
from jury.engine.score_gaps import at_least

EXCERPT_CHARS = 400
DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class DisagreementQuery:
    rubric: str = ""
    min_diff: float = 0.0
    theme: int | None = None
    limit: int = DEFAULT_LIMIT


@dataclass
class DisagreementPage:
    frames: StudyFrames
    rows: list[dict]
    matching: int  # rows matching the query before the limit
    majors: dict[str, int]  # rubric id -> major disagreements (|diff| >= 2) under the filters


def disagreement_page(
    study: Study, filters: ReportFilters, query: DisagreementQuery
) -> DisagreementPage:
    frames = study_frames(
        study,
        include_synthetic=filters.include_synthetic,
        model=filters.model or None,
        track=filters.track or None,
        include_learned=filters.include_learned,
    )
    ranked = ranked_disagreements(frames)
    majors = ranked[ranked["major"]].groupby(RUBRIC).size().to_dict()
    tags = themes.tags_by_key(study)
    settled = adjudications_by_key(study)
    chosen = ranked
    if query.rubric:
        chosen = chosen[chosen[RUBRIC] == query.rubric]
    chosen = chosen[at_least(chosen["abs_diff"], query.min_diff)]
    if query.theme is not None:
        tagged = {key for key, found in tags.items() if query.theme in {t.theme_id for t in found}}
        keys = zip(chosen[ITEM], chosen[RUBRIC], strict=True)
        chosen = chosen[[key in tagged for key in keys]]
    shown = chosen.head(query.limit)
    return DisagreementPage(
        frames=frames,
        rows=_rows(study, frames, shown, tags, settled),
        matching=len(chosen),
        majors={r.rubric_id: int(majors.get(r.rubric_id, 0)) for r in frames.judged_rubrics},
    )


def _rows(study: Study, frames: StudyFrames, shown: pd.DataFrame, tags, settled) -> list[dict]:
    if shown.empty:
        return []
    items = set(shown[ITEM])
    study_items = {
        item.conversation_id: item
        for item in study.items.filter(conversation_id__in=items).select_related("conversation")
    }
    clinicians = frames.clinicians_long[frames.clinicians_long[ITEM].isin(items)]
    assignments = {
        a.pk: a
        for a in Assignment.objects.filter(
            pk__in=set(clinicians["assignment"].tolist())
        ).select_related("annotator")
    }
    events = _events(items, assignments.values())
    judges = frames.judges_long[frames.judges_long[ITEM].isin(items)]
    explanations = judge_explanations(frames, items)
    rows = []
    for row in shown.itertuples(index=False):
        item, rubric = getattr(row, ITEM), getattr(row, RUBRIC)
        rows.append(
            {
                "item": study_items[item],
                "rubric": frames.rubric(rubric),
                "model": row.model,
                "jury": row.jury,
                "clinician_mean": row.clinician_mean,
                "diff": row.diff,
                "major": bool(row.major),
                "judges": _judges(judges, explanations, item, rubric),
                "clinicians": _clinicians(clinicians, assignments, events, item, rubric),
                "tags": tags.get((item, rubric), []),
                "adjudication": settled.get((item, rubric)),
            }
        )
    return rows


def _judges(judges: pd.DataFrame, explanations: dict, item: int, rubric: str) -> list[dict]:
    own = judges[(judges[ITEM] == item) & (judges[RUBRIC] == rubric)].sort_values(JUDGE)
    return [
        {
            "index": r.judge,
            "model": r.judge_model,
            "score": r.score,
            "explanation": explanations.get((item, rubric, r.judge), ""),
            "version": r.rubric_version,
        }
        for r in own.itertuples(index=False)
    ]


def _clinicians(clinicians, assignments, events, item: int, rubric: str) -> list[dict]:
    own = clinicians[(clinicians[ITEM] == item) & (clinicians[RUBRIC] == rubric)]
    rows = []
    for r in own.itertuples(index=False):
        assignment = assignments[r.assignment]
        linked = assignment.event_links.get(rubric, [])
        rows.append(
            {
                "assignment": assignment,
                "username": assignment.annotator.username,
                "active": assignment.annotator.is_active,
                "score": r.score,
                "synthetic": r.synthetic,
                "imported": assignment.imported,
                "feedback": assignment.feedback.get(rubric, ""),
                "overall": assignment.overall_comment,
                "events": [events[(item, e)] for e in linked if (item, e) in events],
                "missing_events": [e for e in linked if (item, e) not in events],
            }
        )
    return rows


def _events(items: set[int], assignments) -> dict[tuple[int, str], dict]:
    """The trace events the shown feedback points at, with a short excerpt of each."""
    wanted = {e for a in assignments for linked in a.event_links.values() for e in linked}
    if not wanted:
        return {}
    found = TraceEvent.objects.filter(conversation_id__in=items, event_id__in=wanted).values(
        "conversation_id", "event_id", "turn", "kind", "tool_name", "content"
    )
    return {
        (e["conversation_id"], e["event_id"]): e | {"excerpt": _excerpt(e["content"])}
        for e in found
    }


def _excerpt(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def majors_by_round(project, filters: ReportFilters) -> list[dict]:
    """Per round of the project (calibration rounds in order, then target studies): major
    disagreements per judged rubric and in total, under the same filters."""
    rounds = []
    for study in project_rounds(project):
        frames = study_frames(
            study,
            include_synthetic=filters.include_synthetic,
            model=filters.model or None,
            track=filters.track or None,
            include_learned=filters.include_learned,
        )
        ranked = ranked_disagreements(frames)
        ranked = ranked[ranked[JURY].notna()]
        majors = ranked[ranked["major"]].groupby(RUBRIC).size().to_dict()
        rounds.append(
            {
                "study": study,
                "label": round_label(study),
                "compared": len(ranked),
                "majors": {r.rubric_id: int(majors.get(r.rubric_id, 0)) for r in frames.rubrics},
                "total": int(ranked["major"].sum()),
            }
        )
    return rounds
