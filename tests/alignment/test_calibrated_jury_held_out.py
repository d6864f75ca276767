"""A calibrated jury version is measured only on the conversations it did not learn from, on
every page and export that computes agreement from its scores, unless the researcher includes
them (and then the figures say they are not held out); and the history of a jury's versions
compares them on the same held-out conversations."""

import csv
import io

import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.services import exports, jury_history
from alignment.services import rescoring as loop
from alignment.services.frames import LEARNED, study_frames
from alignment.services.reports import ReportFilters, compute_report
from jury.engine.calibration import Calibration, Example, RubricCalibration
from jury.services import juries
from tests.alignment.loop_support import constructed_study, rescored

RESAMPLES = 50
LEARNED_ITEMS = 2


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def promoted(study, base):
    """Version 2 of `base`, learned from the study's first two conversations."""
    items = list(study.items.order_by("position").values_list("conversation_id", flat=True))
    learned = items[:LEARNED_ITEMS]
    rubric = study.rubric_versions.filter(kind="dimension").first().rubric_id
    calibration = Calibration(
        rubrics={rubric: RubricCalibration(examples=(Example(learned[0], 4, "Clear advice."),))}
    )
    learned_from = {
        "study_id": study.pk,
        "study_name": study.name,
        "variant": "examples",
        "items": learned,
        "n_ratings": 8,
        "fitted_at": "2025-01-01T00:00:00Z",
    }
    return juries.jury_version_create(base, calibration, learned_from=learned_from)


@pytest.fixture
def calibrated(scored_job):
    """A study annotated on its six conversations, re-scored by a promoted version of its jury."""
    study = constructed_study(scored_job)
    version = promoted(study, scored_job.jury)
    jobs = rescored(study, version)
    return study, version, jobs


def n_items(comparison, configuration) -> set[int]:
    return {
        row.agreement.jury_adjacent.n_items
        for section in comparison.rubrics
        for row in section.rows
        if row.configuration.key == configuration.key
    }


@pytest.mark.django_db
def test_the_comparison_leaves_out_what_a_version_learned_from_unless_asked(calibrated):
    study, version, _ = calibrated
    held_out = loop.jury_comparison(study, resamples=RESAMPLES)
    original, rescore = held_out.configurations
    assert rescore.juries == (version,)
    assert n_items(held_out, original) == {6} and n_items(held_out, rescore) == {6 - LEARNED_ITEMS}
    assert held_out.learned == {original.key: 0, rescore.key: LEARNED_ITEMS}
    assert held_out.learned_note(rescore).startswith("2 conversations left out")

    counted = loop.jury_comparison(study, resamples=RESAMPLES, include_learned=True)
    assert n_items(counted, counted.configurations[1]) == {6}
    assert "not held out" in counted.learned_note(counted.configurations[1])
    rows = list(csv.DictReader(io.StringIO(loop.comparison_csv(counted))))
    mine = [row for row in rows if row["jury"] == version.name]
    assert {(row["learned_conversations"], row["held_out"]) for row in mine} == {("2", "no")}


@pytest.mark.django_db
def test_the_study_report_of_a_calibrated_jury_is_held_out_by_default(calibrated):
    study, version, jobs = calibrated
    study.scoring_jobs.set(jobs)  # the study's own jury is now the calibrated version
    report = compute_report(study, ReportFilters(), resamples=RESAMPLES)
    assert report.learned == LEARNED_ITEMS
    assert report.excluded[LEARNED] > 0
    assert {s.agreement.jury_adjacent.n_items for s in report.sections} == {6 - LEARNED_ITEMS}
    assert (
        report.learned_note
        == "2 conversations left out: this jury learned from their clinician scores"
    )
    assert "2 conversations left out" in exports.agreement_export(report, "csv", study=study)

    counted = compute_report(study, ReportFilters(include_learned=True), resamples=RESAMPLES)
    assert {s.agreement.jury_adjacent.n_items for s in counted.sections} == {6}
    assert counted.excluded[LEARNED] == 0
    assert "not held out" in exports.agreement_export(counted, "md", study=study)


@pytest.mark.django_db
def test_frames_keep_the_clinicians_of_learned_conversations(calibrated):
    study, version, jobs = calibrated
    frames = study_frames(study, job=jobs[0])
    assert frames.learned == version.learned_items
    assert not frames.jury_long["item"].isin(version.learned_items).any()
    assert not frames.judges_long["item"].isin(version.learned_items).any()
    assert frames.clinicians_long["item"].isin(version.learned_items).any()


@pytest.mark.django_db
def test_an_uncalibrated_jury_leaves_nothing_out(scored_job):
    study = constructed_study(scored_job)
    frames = study_frames(study)
    assert frames.learned == frozenset() and frames.learned_note == ""
    assert frames.excluded[LEARNED] == 0


@pytest.mark.django_db
def test_the_report_page_says_what_it_left_out_and_offers_the_toggle(calibrated, researcher_client):
    study, _, jobs = calibrated
    study.scoring_jobs.set(jobs)
    url = reverse("alignment:report", args=[study.pk])
    page = researcher_client.get(url).content.decode()
    assert "2 conversations left out: this jury learned from their clinician scores" in page
    assert 'href="?learned=1"' in page
    included = researcher_client.get(f"{url}?learned=1").content.decode()
    assert "not held out" in included and 'href="?"' in included


@pytest.mark.django_db
def test_the_history_compares_two_versions_on_the_same_held_out_conversations(calibrated):
    study, version, _ = calibrated
    history = jury_history.jury_history(study, resamples=RESAMPLES)
    assert [jury.pk for jury in history.scored] == [version.base_id, version.pk]
    assert history.left_out == LEARNED_ITEMS and history.unscored == []
    assert len(history.rubrics) == 6
    for section in history.rubrics:
        assert section.n_items == 6 - LEARNED_ITEMS
        assert [row.jury.version for row in section.rows] == [1, 2]
        assert {row.agreement.jury_adjacent.n_items for row in section.rows} == {4}
    table = jury_history.history_rows(history)
    assert len(table) == 12 and set(table["Jury version"]) == {version.base.name, version.name}
    assert "left out" in jury_history.history_export(history, "tex", study=study)


@pytest.mark.django_db
def test_a_version_that_has_not_scored_the_study_is_listed_apart(scored_job):
    study = constructed_study(scored_job)
    version = promoted(study, scored_job.jury)
    history = jury_history.jury_history(study, resamples=RESAMPLES)
    assert [jury.pk for jury in history.scored] == [scored_job.jury_id]
    assert [jury.pk for jury in history.unscored] == [version.pk]
    assert history.left_out == 0  # only the compared versions' conversations are left out


@pytest.mark.django_db
def test_the_history_page_and_its_exports(calibrated, researcher_client):
    study, version, _ = calibrated
    page = researcher_client.get(reverse("alignment:jury_history", args=[study.pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert 'id="history-chart"' in text and "<svg" in text and version.name in text
    assert "2 conversations left out" in text
    export = researcher_client.get(reverse("alignment:jury_history_export", args=[study.pk, "csv"]))
    body = b"".join(export.streaming_content) if export.streaming else export.content
    assert version.name in body.decode()
    missing = researcher_client.get(
        reverse("alignment:jury_history_export", args=[study.pk, "xls"])
    )
    assert missing.status_code == 404


@pytest.mark.django_db
def test_a_study_without_a_jury_has_no_history(scored_job):
    study = constructed_study(scored_job)
    study.scoring_jobs.clear()
    history = jury_history.jury_history(study, resamples=RESAMPLES)
    assert history.reason == jury_history.NO_JOBS and history.rubrics == []


@pytest.mark.django_db
def test_the_disagreement_and_trend_pages_say_what_they_left_out(calibrated, researcher_client):
    study, version, jobs = calibrated
    study.scoring_jobs.set(jobs)
    note = "2 conversations left out: this jury learned from their clinician scores"
    disagreements = reverse("alignment:disagreements", args=[study.pk])
    page = researcher_client.get(disagreements).content.decode()
    assert note in page
    assert not any(f'id="item-{item}-' in page for item in version.learned_items)
    included = researcher_client.get(f"{disagreements}?learned=1").content.decode()
    assert "not held out" in included
    assert any(f'id="item-{item}-' in included for item in version.learned_items)
    trend = researcher_client.get(reverse("alignment:trend", args=[study.project.pk]))
    assert note in trend.content.decode()


@pytest.mark.django_db
def test_the_drift_export_says_what_each_round_left_out(calibrated, researcher_client):
    study, _, jobs = calibrated
    study.scoring_jobs.set(jobs)
    export = researcher_client.get(reverse("alignment:drift_export", args=[study.pk, "md"]))
    body = b"".join(export.streaming_content) if export.streaming else export.content
    assert "2 conversations left out: this jury learned from their clinician scores." in (
        body.decode()
    )
