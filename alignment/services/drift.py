"""Each clinician's drift over the rounds of a project: their agreement with the other
clinicians and with the jury in every round (calibration rounds in order, then the target
studies), and a flag where a bias moved by more than the study's `drift_flag_points` from one
round to the next. Every round's figures come from its own cached report, so the drift and the
rounds' report pages agree."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from alignment.engine.annotators import AnnotatorPeriod, DriftFlag, drift_flags
from alignment.services.exports import Person
from alignment.services.formats import estimate_text
from alignment.services.reports import ReportFilters, study_report
from alignment.services.trend import project_rounds, round_label
from annotation.models import Study
from common.synthetic import COLUMN, NOTE, yes_no
from jury.engine.stats import export_table

MEASURE_NAMES = {"peer_bias": "bias vs the other clinicians", "jury_bias": "bias vs the jury"}


@dataclass
class Drift:
    threshold: float
    labels: list[str]  # rounds in order
    figures: dict[str, dict[int, AnnotatorPeriod]]  # round label -> rater -> figures
    flags: list[DriftFlag]
    names: dict[int, str] = field(default_factory=dict)  # rater -> username
    synthetic: set[int] = field(default_factory=set)  # raters who are synthetic clinicians
    # round label -> its report's sentence on conversations a calibrated jury learned from
    learned: dict[str, str] = field(default_factory=dict)

    def note(self) -> str:
        """What an export's reader must not miss: synthetic ratings counted, and per round the
        conversations the jury learned from (left out, or counted and so not held out)."""
        rounds = [f"{label}: {sentence}." for label, sentence in self.learned.items()]
        return " ".join([NOTE] * self.has_synthetic + rounds)

    def rows(self) -> list[tuple[str, list[AnnotatorPeriod | None]]]:
        """(username, [their figures in each round or None]) for every clinician."""
        return [
            (self.names[rater], [self.figures[label].get(rater) for label in self.labels])
            for rater in sorted(self.names, key=lambda r: self.names[r])
        ]

    @property
    def has_synthetic(self) -> bool:
        """Whether any figure counts a synthetic clinician's ratings."""
        return any(rater in self.synthetic for per in self.figures.values() for rater in per)

    def flag_sentences(self) -> list[str]:
        return [
            f"{self.names.get(f.rater, f.rater)}: {MEASURE_NAMES[f.measure]} moved by "
            f"{f.moved:+.2f} points from {f.before} to {f.after} (flag at {self.threshold:g})"
            for f in self.flags
        ]


def annotator_drift(study: Study, filters: ReportFilters) -> Drift:
    rounds = project_rounds(study.project)
    labels, figures, names, synthetic, learned = [], {}, {}, set(), {}
    for each in rounds:
        report = study_report(each, filters)
        label = round_label(each)
        labels.append(label)
        figures[label] = {figure.rater: figure for figure in report.annotator_quality}
        names |= {rater: info.username for rater, info in report.raters.items()}
        synthetic |= {rater for rater, info in report.raters.items() if info.synthetic}
        if report.learned_note:
            learned[label] = report.learned_note
    flags = drift_flags(
        [(label, figures[label]) for label in labels], threshold=study.drift_flag_points
    )
    return Drift(study.drift_flag_points, labels, figures, flags, names, synthetic, learned)


def drift_table(drift: Drift, person: Person | None = None) -> pd.DataFrame:
    name = person or (lambda rater: drift.names.get(rater, str(rater)))
    flagged = {(f.rater, f.after) for f in drift.flags}
    rows = [
        {
            "Clinician": name(rater),
            "Round": label,
            "Ratings": figure.ratings,
            "Agreement with the others": estimate_text(figure.peer_agreement, "share"),
            "Bias vs the others": estimate_text(figure.peer_bias, "signed"),
            "Agreement with the jury": estimate_text(figure.jury_agreement, "share"),
            "Bias vs the jury": estimate_text(figure.jury_bias, "signed"),
            "Flag": "bias moved" if (rater, label) in flagged else "",
            COLUMN: yes_no(rater in drift.synthetic),
        }
        for label in drift.labels
        for rater, figure in sorted(drift.figures[label].items(), key=lambda kv: name(kv[0]))
    ]
    return pd.DataFrame(
        rows,
        columns=[
            "Clinician",
            "Round",
            "Ratings",
            "Agreement with the others",
            "Bias vs the others",
            "Agreement with the jury",
            "Bias vs the jury",
            "Flag",
            COLUMN,
        ],
    )


def drift_export(drift: Drift, fmt: str, *, study: Study) -> str:
    caption = (
        f"Each clinician per round of {study.project.name}: agreement with the other "
        "clinicians and the jury, bias, and a flag where a bias moved by more than "
        f"{drift.threshold:g} points between rounds"
    )
    return export_table(
        drift_table(drift),
        fmt,
        caption=caption,
        label=f"study {study.pk} drift",
        note=drift.note(),
    )
