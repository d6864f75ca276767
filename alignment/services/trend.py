"""The calibration trend of a project: its calibration rounds in order, then its target
studies, each with adjacent agreement and major disagreements per rubric and per annotator.
Every round's figures come from its own cached report (alignment.services.reports), so the
trend and the round's report page always agree; the page's two charts are cached too, keyed
by what they plot (`trend_chart_svg`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from matplotlib.figure import Figure

from alignment.services import figures
from alignment.services.reports import CACHE_SECONDS, ReportFilters, StudyReport, study_report
from annotation.models import Project, Study, StudyKind

CHART_TITLES = {
    "rubrics": ("Jury-clinician adjacent agreement per rubric", "adjacent agreement"),
    "annotators": ("Each annotator against the jury", "ratings within 1 of the jury"),
}

CHART_GAPS = {
    "rubrics": "No chart of the rubrics yet: no round has a conversation with both a jury score "
    "and a counted clinician score under these filters.",
    "annotators": "No chart of the annotators yet: no counted rating has a jury score to "
    "compare with under these filters.",
}


@dataclass
class Trend:
    rounds: list[Study]
    reports: list[StudyReport]
    rubrics: list[tuple[str, str]]  # (rubric id, name) in report order, over every round
    annotators: list[str]

    @property
    def learned_rounds(self) -> list[tuple[Study, StudyReport]]:
        """Rounds scored by a jury that learned from some of their conversations."""
        return [(s, r) for s, r in zip(self.rounds, self.reports, strict=True) if r.learned_note]

    @property
    def labels(self) -> list[str]:
        return [round_label(study) for study in self.rounds]

    def rubric_series(self) -> tuple[dict, dict]:
        """name -> [(adjacent, low, high) per round], name -> [majors per round]."""
        agreement, majors = {}, {}
        for rubric_id, name in self.rubrics:
            sections = [report.section(rubric_id) for report in self.reports]
            agreement[name] = [
                (None, None, None) if s is None else _triple(s.agreement.jury_adjacent)
                for s in sections
            ]
            majors[name] = [0 if s is None else s.agreement.major_disagreements for s in sections]
        return agreement, majors

    def annotator_cells(self) -> list[tuple[str, list]]:
        """(username, [their row in each round's report, or None])."""
        return [
            (name, [_annotator_row(report, name) for report in self.reports])
            for name in self.annotators
        ]

    def annotator_series(self) -> tuple[dict, dict]:
        """username -> [(share of ratings within 1 of the jury, None, None) per round],
        username -> [ratings |score - jury| >= 2 per round]."""
        agreement, majors = {}, {}
        for name, rows in self.annotator_cells():
            agreement[name] = [
                (None, None, None) if r is None else (r.adjacent, None, None) for r in rows
            ]
            majors[name] = [0 if r is None else int(r.majors) for r in rows]
        return agreement, majors


def project_rounds(project: Project) -> list[Study]:
    studies = list(project.studies.all())
    calibration = sorted(
        (s for s in studies if s.kind == StudyKind.CALIBRATION), key=lambda s: s.round_number
    )
    targets = sorted((s for s in studies if s.kind == StudyKind.TARGET), key=lambda s: s.pk)
    return calibration + targets


def round_label(study: Study) -> str:
    if study.kind == StudyKind.CALIBRATION:
        return f"Round {study.round_number}"
    return study.name


def calibration_trend(project: Project, filters: ReportFilters) -> Trend:
    rounds = project_rounds(project)
    reports = [study_report(study, filters) for study in rounds]
    rubrics: dict[str, str] = {}
    annotators: set[str] = set()
    for report in reports:
        for section in report.sections:
            rubrics.setdefault(section.rubric.rubric_id, section.rubric.name)
        annotators |= set(report.annotators.get("username", []))
    return Trend(rounds, reports, list(rubrics.items()), sorted(annotators))


def _triple(estimate) -> tuple:
    return (estimate.value, estimate.low, estimate.high)


def _annotator_row(report: StudyReport, username: str):
    rows = report.annotators
    if rows.empty:
        return None
    own = rows[rows["username"] == username]
    return None if own.empty else next(own.itertuples(index=False))


def chart_gap(data: Trend, kind: str) -> str:
    """Why the chart of `kind` would be empty ("" when it has something to plot): a chart
    without a single point is not offered, as a figure or a download."""
    if not data.rounds:
        return "This project has no study yet."
    agreement, majors = _series(data, kind)
    plotted = any(value is not None for series in agreement.values() for value, _, _ in series)
    if plotted or any(count for counts in majors.values() for count in counts):
        return ""
    return CHART_GAPS[kind]


def trend_chart(data: Trend, kind: str) -> Figure:
    """The trend of the rubrics ("rubrics") or of the annotators ("annotators")."""
    agreement, majors = _series(data, kind)
    title, agreement_label = CHART_TITLES[kind]
    return figures.trend_figure(
        data.labels, agreement, majors, title=title, agreement_label=agreement_label
    )


def chart_salt(kind: str) -> str:
    """The chart's SVG hash salt, the same inline and downloaded (the page's and the API's)."""
    return f"trend-{kind}"


def trend_chart_svg(data: Trend, kind: str, *, salt: str) -> str:
    """`trend_chart` as the page's inline SVG. Drawing it takes most of the page's time, so
    it is kept for as long as reports are, under a key made of everything it plots: a round
    whose figures changed (a new annotation, a new score: a new report) draws a new chart,
    and an unchanged trend is never drawn twice."""
    plotted = repr((kind, salt, data.labels, _series(data, kind)))
    key = f"alignment:trend-chart:{hashlib.sha256(plotted.encode()).hexdigest()}"
    svg = cache.get(key)
    if svg is None:
        svg = figures.inline_svg(trend_chart(data, kind), salt=salt)
        cache.set(key, svg, CACHE_SECONDS)
    return svg


def _series(data: Trend, kind: str) -> tuple[dict, dict]:
    return data.rubric_series() if kind == "rubrics" else data.annotator_series()
