"""The history of a jury's versions on a study: per judged rubric, how each promoted version of
the study's original jury agrees with the clinicians, so a researcher sees what each
calibration changed.

A version counts when it has scored the study's conversations, in the jobs the study was drawn
from or in a re-score (alignment.services.rescoring); when it scored them in several
configurations (other rubric versions or prompts), its newest configuration speaks for it. The
versions are compared on the same conversations: those every compared version scored, that the
clinicians rated, and that none of them learned from, so no version is measured on its own
training conversations and no version gains from easier ones. Fold juries (cross-fitting) are
not versions and never appear.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd
from django.core.cache import cache
from matplotlib.figure import Figure

from alignment.engine.agreement import RubricAgreement, rubric_agreement
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE
from alignment.services import figures
from alignment.services.exports import EXPORT_FORMATS
from alignment.services.formats import estimate_text, undefined_note
from alignment.services.frames import RubricInfo, study_frames
from alignment.services.rescoring import (
    Configuration,
    configuration_jury,
    jobs_state,
    study_configurations,
)
from alignment.services.state import CACHE_SECONDS, RESAMPLES, SEED, study_state
from annotation.models import Study
from jury.engine.stats import export_table
from jury.models import Jury
from jury.services.juries import jury_versions

# (RubricAgreement field, column label, format) of the table, the chart drawing the first.
FIGURES = (
    ("jury_adjacent", "Adjacent agreement", "share"),
    ("alpha_with_jury", "Alpha with the jury", "number"),
    ("mean_signed_diff", "Mean signed difference (jury - clinicians)", "signed"),
)
NO_JOBS = "No scoring job is linked to this study yet: there is no jury whose versions to follow."


@dataclass(frozen=True)
class HistoryRow:
    jury: Jury
    configuration: Configuration
    agreement: RubricAgreement


@dataclass(frozen=True)
class RubricHistory:
    rubric: RubricInfo
    rows: list[HistoryRow]  # oldest version first
    n_items: int  # conversations the versions are compared on


@dataclass
class JuryHistory:
    study_id: int
    family: list[Jury]  # every promoted version of the study's jury, oldest first
    rubrics: list[RubricHistory] = field(default_factory=list)
    scored: list[Jury] = field(default_factory=list)  # the versions with scores on the study
    left_out: int = 0  # study conversations some compared version learned from
    include_synthetic: bool = False
    resamples: int = RESAMPLES
    reason: str = ""  # why there is no history to show ("" when there is)

    @property
    def unscored(self) -> list[Jury]:
        scored = {jury.pk for jury in self.scored}
        return [jury for jury in self.family if jury.pk not in scored]


def jury_history(
    study: Study, *, include_synthetic: bool = False, resamples: int = RESAMPLES, seed: int = SEED
) -> JuryHistory:
    """The history, cached per study state and scoring jobs like the jury comparison."""
    configurations = study_configurations(study)
    state = f"{study_state(study)}:{jobs_state(configurations)}"
    digest = hashlib.sha256(state.encode()).hexdigest()[:24]
    key = f"alignment:history:{study.pk}:{int(include_synthetic)}:{resamples}:{seed}:{digest}"
    history = cache.get(key)
    if history is None:
        history = _history(
            study,
            configurations,
            include_synthetic=include_synthetic,
            resamples=resamples,
            seed=seed,
        )
        cache.set(key, history, CACHE_SECONDS)
    return history


def _history(
    study: Study,
    configurations: list[Configuration],
    *,
    include_synthetic: bool,
    resamples: int,
    seed: int,
) -> JuryHistory:
    first = study.scoring_jobs.select_related("jury").order_by("pk").first()
    if first is None:
        return JuryHistory(study.pk, [], include_synthetic=include_synthetic, reason=NO_JOBS)
    family = jury_versions(first.jury)
    frames = study_frames(study, include_synthetic=include_synthetic, include_learned=True)
    scored = _scored_versions(study, family, configurations, frames, include_synthetic)
    learned = frozenset().union(*(jury.learned_items for jury, _, _ in scored))
    history = JuryHistory(
        study.pk,
        family,
        scored=[jury for jury, _, _ in scored],
        left_out=len(learned & set(frames.models)),
        include_synthetic=include_synthetic,
        resamples=resamples,
    )
    for rubric in frames.judged_rubrics:
        rated = frames.clinicians_long
        rated = rated.loc[rated[RUBRIC] == rubric.rubric_id, [ITEM, RATER, SCORE]]
        history.rubrics.append(_rubric_history(rubric, rated, scored, learned, resamples, seed))
    if not scored:
        history.reason = "No version of this jury has scored the study's conversations yet."
    return history


def _scored_versions(study, family, configurations, frames, include_synthetic) -> list[tuple]:
    """(version, its newest configuration on the study, its jury means) per version that
    scored the study alone (a configuration mixing juries speaks for none of them)."""
    scored = []
    for version in family:
        own = [c for c in configurations if [jury.pk for jury in c.juries] == [version.pk]]
        if not own:
            continue
        configuration = own[-1]
        if configuration.original:
            means = frames.jury_long
        else:
            means, _ = configuration_jury(
                study, configuration, include_synthetic=include_synthetic, include_learned=True
            )
        scored.append((version, configuration, means))
    return scored


def _rubric_history(rubric, rated, scored, learned, resamples: int, seed: int) -> RubricHistory:
    series = {}
    for version, configuration, means in scored:
        if rubric.rubric_id in configuration.versions:
            own = means.loc[means[RUBRIC] == rubric.rubric_id].set_index(ITEM)[JURY].dropna()
            series[version.pk] = (version, configuration, own)
    common = set(rated[ITEM]) - learned
    for _, _, own in series.values():
        common &= set(own.index)
    compared = rated[rated[ITEM].isin(common)]
    rows = [
        HistoryRow(
            version,
            configuration,
            rubric_agreement(compared, own[own.index.isin(common)], resamples=resamples, seed=seed),
        )
        for version, configuration, own in series.values()
    ]
    return RubricHistory(rubric, rows, len(common))


# --- the table, its exports and the chart ------------------------------------------------------


def history_rows(history: JuryHistory) -> pd.DataFrame:
    """One row per (judged rubric, version): the figures with their intervals and notes."""
    rows = []
    for section in history.rubrics:
        for row in section.rows:
            cells = {
                "Rubric": section.rubric.name,
                "Jury version": row.jury.name,
                "Version": row.jury.version,
                "Configuration": row.configuration.label,
                "Conversations": section.n_items,
            }
            notes = []
            for name, label, fmt in FIGURES:
                estimate = getattr(row.agreement, name)
                cells[label] = estimate_text(estimate, fmt)
                if estimate.value is None:
                    notes.append(f"{label}: {undefined_note(estimate)}")
            rows.append(cells | {"Notes": "; ".join(notes)})
    columns = ["Rubric", "Jury version", "Version", "Configuration", "Conversations"]
    return pd.DataFrame(rows, columns=[*columns, *(label for _, label, _ in FIGURES), "Notes"])


def history_note(history: JuryHistory) -> str:
    """What every page and export of the history says about the conversations compared."""
    return (
        "Each version is measured on the same held-out conversations: those every compared "
        f"version scored and none learned from ({history.left_out} conversation"
        f"{'s' if history.left_out != 1 else ''} left out because a version learned from "
        "their clinician scores)."
    )


def history_export(history: JuryHistory, suffix: str, *, study: Study) -> str:
    if suffix not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {', '.join(EXPORT_FORMATS)}")
    return export_table(
        history_rows(history),
        EXPORT_FORMATS[suffix][0],
        caption=f"Agreement with the clinicians per jury version, {study.name}",
        label=f"study {study.pk} jury history",
        note=history_note(history),
    )


def history_figure(history: JuryHistory) -> Figure:
    """Adjacent agreement (with its interval) per rubric, a line across the versions."""
    versions = history.scored
    labels = [f"v{jury.version}" for jury in versions]
    series = {}
    for section in history.rubrics:
        by_version = {row.jury.pk: row.agreement.jury_adjacent for row in section.rows}
        series[section.rubric.name] = [_triple(by_version.get(jury.pk)) for jury in versions]
    title = "Adjacent agreement with the clinicians per jury version (held-out conversations)"
    return figures.versions_figure(labels, series, title=title)


def _triple(estimate) -> tuple:
    if estimate is None:
        return (None, None, None)
    return (estimate.value, estimate.low, estimate.high)
