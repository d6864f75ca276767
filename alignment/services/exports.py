"""The agreement table in the paper's shape, as text cells for pages and exports (CSV, Markdown,
LaTeX through jury.engine.stats.export_table), and the number formats they share.

Shares print as percentages, coefficients and differences with two decimals; every figure
carries its 95% bootstrap interval, and an undefined figure prints as "undefined" with its
reason in the Notes column, so a reader never mistakes a missing number for a zero."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from alignment.engine.bootstrap import Estimate
from alignment.services.corrected import CORRECTED_METHOD, corrected_table
from alignment.services.formats import estimate_text, undefined_note
from alignment.services.reports import StudyReport
from annotation.models import Study
from common import synthetic
from jury.engine.stats import export_table

EXPORT_FORMATS = {  # URL suffix -> (jury.engine.stats format, content type)
    "csv": ("csv", "text/csv"),
    "md": ("markdown", "text/markdown"),
    "tex": ("latex", "application/x-tex"),
}
# (column, RubricAgreement field, format) of the paper's table, in order.
PAPER_COLUMNS = (
    ("Jury-clinician adjacent", "jury_adjacent", "share"),
    ("Chance adjacent", "jury_adjacent_chance", "share"),
    ("Human-human adjacent", "human_adjacent", "share"),
    ("Mean signed diff (jury - clinician)", "mean_signed_diff", "signed"),
    ("Alpha (clinicians)", "alpha_clinicians", "number"),
    ("Alpha (with jury)", "alpha_with_jury", "number"),
)


def agreement_rows(report: StudyReport) -> pd.DataFrame:
    """One row per judged rubric: n, the paper's figures with intervals, and notes saying why
    any figure is undefined."""
    rows = []
    for section in report.sections:
        agreement = section.agreement
        row = {
            "Rubric": section.rubric.name,
            "Version": f"v{section.rubric.version}",
            "Conversations": agreement.n_items,
            "Ratings": agreement.n_ratings,
            "Raters": agreement.n_raters,
        }
        notes = []
        for column, name, fmt in PAPER_COLUMNS:
            estimate = getattr(agreement, name)
            row[column] = estimate_text(estimate, fmt)
            if estimate.value is None:
                notes.append(f"{column}: {estimate.undefined or 'not computed'}")
        row["Major disagreements"] = agreement.major_disagreements
        row["Notes"] = "; ".join(notes)
        rows.append(row)
    columns = ["Rubric", "Version", "Conversations", "Ratings", "Raters"]
    columns += [c for c, _, _ in PAPER_COLUMNS] + ["Major disagreements", "Notes"]
    return pd.DataFrame(rows, columns=columns)


def agreement_export(report: StudyReport, suffix: str, *, study: Study) -> str:
    if suffix not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {', '.join(EXPORT_FORMATS)}")
    caption = (
        f"Jury-clinician agreement per judged rubric, {study.name}: each figure with its 95% "
        "bootstrap interval over conversations"
    )
    return export_table(
        synthetic_marked(agreement_rows(report), report, usernames(report)),
        EXPORT_FORMATS[suffix][0],
        caption=caption,
        label=f"study {study.pk} agreement",
        note=report_note(report),
    )


def report_note(report: StudyReport) -> str:
    """What a reader of an export must not miss: synthetic ratings counted, and the
    conversations a calibrated jury learned from (left out, or counted and so not held out)."""
    learned = f"{report.learned_note}." if report.learned_note else ""
    return " ".join(
        note for note in (synthetic.NOTE if report.synthetic_ratings else "", learned) if note
    )


def synthetic_marked(table: pd.DataFrame, report: StudyReport, person: Person) -> pd.DataFrame:
    """`table` with the column common.synthetic.COLUMN: on a row of one clinician (its
    "Clinician" or "Row" cell names them), whether that clinician is synthetic; on any other
    row, whether the report's figures count synthetic clinicians' ratings."""
    clinicians = {person(rater.id): rater.synthetic for rater in report.raters.values()}
    named = table[[c for c in ("Clinician", "Row") if c in table.columns]]
    counted = bool(report.synthetic_ratings)
    marks = [
        next((clinicians[cell] for cell in cells if cell in clinicians), counted)
        for cells in named.itertuples(index=False)
    ]
    return table.assign(**{synthetic.COLUMN: [synthetic.yes_no(mark) for mark in marks]})


# --- the tables beyond the paper ---------------------------------------------------------------

FIGURE_LABELS = {  # RubricAgreement field -> (label, format)
    "jury_adjacent": ("Jury-clinician adjacent", "share"),
    "jury_adjacent_chance": ("Chance adjacent", "share"),
    "jury_exact": ("Jury-clinician exact", "share"),
    "jury_exact_chance": ("Chance exact", "share"),
    "human_adjacent": ("Human-human adjacent", "share"),
    "human_adjacent_chance": ("Chance human-human adjacent", "share"),
    "human_exact": ("Human-human exact", "share"),
    "human_exact_chance": ("Chance human-human exact", "share"),
    "mean_signed_diff": ("Mean signed diff (jury - clinician)", "signed"),
    "mean_abs_diff": ("Mean absolute diff", "number"),
    "alpha_clinicians": ("Alpha (clinicians)", "number"),
    "alpha_with_jury": ("Alpha (with jury)", "number"),
    "ac2": ("Gwet's AC2 (clinicians)", "number"),
    "icc": ("ICC(A,1) jury vs clinicians", "number"),
    "spearman": ("Spearman jury vs clinicians", "number"),
}
SAMPLE_QUESTION = "how well the jury does on the conversations the study chose"
POPULATION_QUESTION = "how well the jury does on every conversation the benchmark produced"
Person = Callable[[object], str]


def joined(*notes: str) -> str:
    """Notes in order, each once, blanks left out (a set would order them by hash)."""
    return "; ".join(dict.fromkeys(note for note in notes if note))


def weighted_rows(report: StudyReport) -> pd.DataFrame:
    """Every agreement figure of every rubric twice: on the sample and weighted back to the
    population, each with its interval and n, and whether the two intervals are disjoint."""
    rows = []
    sections = [(s.rubric, s.agreement, s.weighted, s.differs) for s in report.sections]
    sections += [(s.rubric, s.agreement, s.weighted, s.differs) for s in report.realism]
    for rubric, sample, weighted, differs in sections:
        for name, (label, fmt) in FIGURE_LABELS.items():
            figure = getattr(sample, name)
            if not rubric.judged and name not in HUMAN_FIGURES:
                continue
            population = getattr(weighted, name) if weighted is not None else None
            notes = [f"sample: {undefined_note(figure)}"] if figure.value is None else []
            if population is None:
                notes.append(f"population: {report.design_reason}")
            elif population.value is None:
                notes.append(f"population: {undefined_note(population)}")
            elif weighted.pooled_strata:
                notes.append(f"population interval: {weighted.pooled_strata}")
            population_text = "" if population is None else estimate_text(population, fmt)
            rows.append(
                {
                    "Rubric": rubric.name,
                    "Figure": label,
                    "Sample": estimate_text(figure, fmt),
                    "Population-weighted": population_text,
                    "Conversations": figure.n_items,
                    "Ratings": figure.n_ratings,
                    "Intervals disjoint": "yes" if name in differs else "",
                    "Notes": "; ".join(notes),
                }
            )
    return pd.DataFrame(rows, columns=WEIGHTED_COLUMNS)


HUMAN_FIGURES = {
    "human_adjacent",
    "human_adjacent_chance",
    "human_exact",
    "human_exact_chance",
    "alpha_clinicians",
    "ac2",
}
WEIGHTED_COLUMNS = [
    "Rubric",
    "Figure",
    "Sample",
    "Population-weighted",
    "Conversations",
    "Ratings",
    "Intervals disjoint",
    "Notes",
]


def _p_text(value: float | None) -> str:
    if value is None:
        return ""
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def alt_test_rows(report: StudyReport, person: Person) -> pd.DataFrame:
    """Per rubric: the summary (winning rate, average advantage probability, the authors'
    verdict, the design warning beside it with what is needed), then one row per clinician
    left out."""
    rows = []
    for section in report.sections:
        test = section.alt_test
        omega = "" if test.winning_rate is None else f"{test.winning_rate:.2f}"
        aap = estimate_text(test.advantage_probability, "number")
        rows.append(
            {
                "Rubric": section.rubric.name,
                "Row": "rubric",
                "Conversations": test.n_items,
                "Ratings": test.n_ratings,
                "Jury advantage": "",
                "Clinician advantage": "",
                "p": "",
                "Adjusted p (BY)": "",
                "Rejected": "",
                "Winning rate": f"{omega} ({test.n_rejected} of {test.n_tested})" if omega else "",
                "Average advantage probability": aap + (" provisional" if test.provisional else ""),
                "Epsilon": test.epsilon,
                "Verdict": test.verdict,
                "Design warning": design_warning_text(test),
                "Notes": test.reason,
            }
        )
        for clinician in test.clinicians:
            rows.append(
                {
                    "Rubric": section.rubric.name,
                    "Row": person(clinician.rater),
                    "Conversations": clinician.n_items,
                    "Ratings": clinician.jury_advantage.n_ratings,
                    "Jury advantage": estimate_text(clinician.jury_advantage, "number"),
                    "Clinician advantage": estimate_text(clinician.clinician_advantage, "number"),
                    "p": _p_text(clinician.p_value),
                    "Adjusted p (BY)": _p_text(clinician.adjusted_p),
                    "Rejected": ("yes" if clinician.rejected else "no") if clinician.tested else "",
                    "Winning rate": "",
                    "Average advantage probability": "",
                    "Epsilon": test.epsilon,
                    "Verdict": "",
                    "Design warning": "",
                    "Notes": clinician.note,
                }
            )
    return pd.DataFrame(rows, columns=ALT_TEST_COLUMNS)


ALT_TEST_COLUMNS = [
    "Rubric",
    "Row",
    "Conversations",
    "Ratings",
    "Jury advantage",
    "Clinician advantage",
    "p",
    "Adjusted p (BY)",
    "Rejected",
    "Winning rate",
    "Average advantage probability",
    "Epsilon",
    "Verdict",
    "Design warning",
    "Notes",
]


def design_warning_text(test) -> str:
    """The alt-test's design warning with what would be needed ("" when the design meets the
    project's conditions)."""
    if not test.design_warning:
        return ""
    return f"{test.design_warning}: needs " + "; ".join(test.needs)


def judge_bias_rows(report: StudyReport) -> pd.DataFrame:
    """Per rubric and judge (then the jury): each diagnostic with its interval and n."""
    rows = []
    for section in report.sections:
        for judge in section.bias:
            name = "Jury (mean)" if judge.judge == "jury" else f"Judge {int(judge.judge) + 1}"
            for figure in judge.figures:
                self_preference = figure.covariate == "self_preference"
                rows.append(
                    {
                        "Rubric": section.rubric.name,
                        "Judge": name,
                        "Model": judge.model,
                        "Family": judge.family_note,
                        "Diagnostic": figure.label,
                        "Estimate": estimate_text(figure.estimate, "signed"),
                        "Unit": figure.unit,
                        "Conversations": figure.estimate.n_items,
                        "Same family": figure.n_same if self_preference else "",
                        "Other families": figure.n_other if self_preference else "",
                        "Notes": undefined_note(figure.estimate),
                    }
                )
    return pd.DataFrame(rows, columns=BIAS_COLUMNS)


BIAS_COLUMNS = [
    "Rubric",
    "Judge",
    "Model",
    "Family",
    "Diagnostic",
    "Estimate",
    "Unit",
    "Conversations",
    "Same family",
    "Other families",
    "Notes",
]


def _compared_counts(agreement: Estimate) -> str:
    """Conversations / ratings a clinician's comparison rests on."""
    return f"{agreement.n_items} / {agreement.n_ratings}"


def annotator_quality_rows(report: StudyReport, person: Person) -> pd.DataFrame:
    """Per clinician, over the study and per week: agreement with the other clinicians (leave
    one out) and with the jury, and the bias against each."""
    rows = []
    for figure in [*report.annotator_quality, *report.annotator_weeks]:
        rater = report.raters.get(figure.rater)
        rows.append(
            {
                "Clinician": person(figure.rater),
                "Track": rater.track if rater else "",
                "Period": "whole study" if figure.period == "all" else figure.period,
                "Ratings": figure.ratings,
                "Agreement with the others": estimate_text(figure.peer_agreement, "share"),
                "Compared with others (conversations / ratings)": _compared_counts(
                    figure.peer_agreement
                ),
                "Bias vs the others": estimate_text(figure.peer_bias, "signed"),
                "Agreement with the jury": estimate_text(figure.jury_agreement, "share"),
                "Compared with the jury (conversations / ratings)": _compared_counts(
                    figure.jury_agreement
                ),
                "Bias vs the jury": estimate_text(figure.jury_bias, "signed"),
                "Notes": joined(
                    undefined_note(figure.peer_agreement), undefined_note(figure.jury_agreement)
                ),
            }
        )
    return pd.DataFrame(rows, columns=QUALITY_COLUMNS)


QUALITY_COLUMNS = [
    "Clinician",
    "Track",
    "Period",
    "Ratings",
    "Agreement with the others",
    "Compared with others (conversations / ratings)",
    "Bias vs the others",
    "Agreement with the jury",
    "Compared with the jury (conversations / ratings)",
    "Bias vs the jury",
    "Notes",
]

STUDY_TABLES = {  # URL name -> (LaTeX caption, builder(report, person))
    "weighted": (
        "Every agreement figure on the sample and weighted back to the population of scored "
        "conversations (Hajek weights, 95% bootstrap intervals within sampling cells)",
        lambda report, person: weighted_rows(report),
    ),
    "alt-test": (
        "Alternative annotator test per rubric: advantage probabilities, one-sided paired "
        "t-tests with margin epsilon, Benjamini-Yekutieli adjusted p, winning rate and verdict",
        alt_test_rows,
    ),
    "corrected": (
        "Clinician-corrected model scores (prediction-powered inference): the jury over every "
        "conversation the study could draw, corrected by the design-weighted clinician - jury "
        f"difference; {CORRECTED_METHOD}",
        lambda report, person: corrected_table(report.corrected),
    ),
    "judge-bias": (
        "Judge bias diagnostics: slope of the judge - clinician difference on conversation "
        "length and tool calls, and the same-family difference, with 95% bootstrap intervals",
        lambda report, person: judge_bias_rows(report),
    ),
    "annotators": (
        "Each clinician against the other clinicians (leave one out) and the jury, over the "
        "study and per week, with 95% bootstrap intervals",
        annotator_quality_rows,
    ),
}


def usernames(report: StudyReport) -> Person:
    def name(rater) -> str:
        known = report.raters.get(rater)
        return known.username if known else str(rater)

    return name


def study_table_export(
    report: StudyReport, name: str, suffix: str, *, study: Study, person: Person | None = None
) -> str:
    """One of STUDY_TABLES as CSV, Markdown or LaTeX; clinicians by username unless `person`
    names them otherwise (the archive's pseudonyms)."""
    if name not in STUDY_TABLES or suffix not in EXPORT_FORMATS:
        raise ValueError(f"unknown table {name!r} or format {suffix!r}")
    caption, build = STUDY_TABLES[name]
    person = person or usernames(report)
    return export_table(
        synthetic_marked(build(report, person), report, person),
        EXPORT_FORMATS[suffix][0],
        caption=f"{caption}; {study.name}",
        label=f"study {study.pk} {name}",
        note=report_note(report),
    )
