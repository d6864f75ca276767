"""The agreement tables of a study as the site computes them, written into the archive.

The same function runs at export and, in the round-trip test and for a reviewer, on the
imported study, so the two can be compared as text. Conversations are named by their archive
id and people by their pseudonym, never by database ids or usernames, so the text does not
depend on the site the study lives in. Floats are written with Python's shortest exact repr:
equal text means equal to the last digit.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields, is_dataclass

import numpy as np
import pandas as pd

from alignment.engine.frames import ITEM, JURY, RUBRIC
from alignment.services.exports import STUDY_TABLES, agreement_export, study_table_export
from alignment.services.frames import study_frames
from alignment.services.reports import ReportFilters, compute_report, ranked_disagreements
from annotation.models import Study
from common.csv_export import frame_csv

AGREEMENT_CSV = "tables/agreement.csv"
AGREEMENT_MD = "tables/agreement.md"
REPORT_JSON = "tables/report.json"
DISAGREEMENTS_CSV = "tables/disagreements.csv"
DISAGREEMENTS_JSON = "tables/disagreements.json"
UNLISTED = "not in the archive"
# The tables beyond the paper (alignment.services.exports.STUDY_TABLES), CSV and Markdown:
# tables/weighted.csv, tables/alt-test.md, ... Each clinician's drift over the rounds of the
# project is not among them: it needs the project's other studies, which an archive lacks.
STUDY_TABLE_FORMATS = ("csv", "md")


def report_tables(
    study: Study, *, conversation_ids: dict[int, int], people: dict[int, str]
) -> dict[str, str]:
    """Member name -> text: the paper's agreement table (CSV, Markdown), the whole report as
    JSON and the ranked disagreements (CSV, JSON), under the report's default filters."""
    report = compute_report(study, ReportFilters())
    disagreements = _disagreements(study, conversation_ids)
    tables = {
        AGREEMENT_CSV: agreement_export(report, "csv", study=study),
        AGREEMENT_MD: agreement_export(report, "md", study=study),
        REPORT_JSON: _dump(_report_json(report, people)),
        DISAGREEMENTS_CSV: frame_csv(disagreements),
        DISAGREEMENTS_JSON: _dump(_plain(disagreements.to_dict(orient="records"), people)),
    }
    for name in STUDY_TABLES:
        for suffix in STUDY_TABLE_FORMATS:
            tables[f"tables/{name}.{suffix}"] = study_table_export(
                report, name, suffix, study=study, person=lambda rater: _person(people, rater)
            )
    return tables


def _report_json(report, people: dict[int, str]) -> dict:
    annotators = report.annotators
    return {
        "filters": "default: synthetic work left out, every model and track",
        "resamples": report.resamples,
        "n_items": report.n_items,
        "n_ratings": report.n_ratings,
        "excluded_ratings": report.excluded,
        "excluded_annotations": report.excluded_annotations,
        "population_weights": report.design_source or f"none: {report.design_reason}",
        "alt_test_epsilon": report.epsilon,
        "rubrics": [
            {
                "rubric": _plain(section.rubric, people),
                "agreement": _plain(section.agreement, people),
                "agreement_population_weighted": _plain(section.weighted, people),
                "sample_and_population_intervals_disjoint": section.differs,
                "judges": _plain(section.judges, people),
                "judges_population_weighted": _plain(section.weighted_judges, people),
                "judges_reason": section.judges_reason,
                "judge_models": {str(k): v for k, v in sorted(section.judge_models.items())},
                "alt_test": _plain(section.alt_test, people),
                "judge_bias": _plain(section.bias, people),
            }
            for section in report.sections
        ],
        "realism": [
            {
                "rubric": _plain(section.rubric, people),
                "summary": _plain(section.summary, people),
                "agreement": _plain(section.agreement, people),
                "agreement_population_weighted": _plain(section.weighted, people),
            }
            for section in report.realism
        ],
        "clinician_corrected": _plain(report.corrected, people),
        "annotator_quality": _plain(report.annotator_quality, people),
        "annotator_quality_by_week": _plain(report.annotator_weeks, people),
        "annotators": [
            {
                "annotator": _person(people, row.rater),
                "track": row.track,
                "synthetic": bool(row.synthetic),
                "ratings": int(row.ratings),
                "adjacent": _plain(row.adjacent, people),
                "majors": int(row.majors),
                "mean_diff": _plain(row.mean_diff, people),
            }
            for row in annotators.sort_values("rater").itertuples(index=False)
        ]
        if not annotators.empty
        else [],
    }


def _disagreements(study: Study, conversation_ids: dict[int, int]) -> pd.DataFrame:
    """The disagreement report's rows: largest |jury - clinicians| first, ties by rubric and
    conversation (archive id, so the order is the same wherever the study is imported)."""
    ranked = ranked_disagreements(study_frames(study))
    ranked = ranked.assign(conversation=ranked[ITEM].map(conversation_ids)).drop(columns=[ITEM])
    ranked = ranked.sort_values(
        ["abs_diff", RUBRIC, "conversation"],
        ascending=[False, True, True],
        na_position="last",
        kind="stable",
    )
    columns = [
        "conversation",
        RUBRIC,
        "model",
        JURY,
        "clinician_mean",
        "n_ratings",
        "diff",
        "abs_diff",
        "major",
    ]
    return ranked[columns].reset_index(drop=True)


def _plain(value, people: dict[int, str]):
    """Report objects as JSON values: dataclasses and named tuples as objects, numpy scalars as
    numbers, NaN as null, clinician ids (kappa pairs) as pseudonyms."""
    if is_dataclass(value):  # a `rater` field holds a clinician id: written as the pseudonym
        return {
            f.name: _person(people, getattr(value, f.name))
            if f.name == "rater"
            else _plain(getattr(value, f.name), people)
            for f in fields(value)
        }
    if hasattr(value, "_asdict"):  # KappaPair: the two raters are clinician ids
        pair = value._asdict()
        pair["rater_a"] = _person(people, pair["rater_a"])
        pair["rater_b"] = _person(people, pair["rater_b"])
        return {k: _plain(v, people) for k, v in pair.items()}
    if isinstance(value, dict):
        return {str(k): _plain(v, people) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v, people) for v in value]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    return value


def _person(people: dict[int, str], rater: int) -> str:
    # Only in an open study exported while someone submitted their first work: the tables
    # are computed after the people were written (lock a study for an exact record).
    return people.get(rater, UNLISTED)


def _dump(value) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n"
