"""The study report beyond the paper, on stored studies: every figure population-weighted, the
design recorded or reconstructed (or missing, said so), clinician-corrected scores by hand,
the alternative annotator test, judge bias and each clinician's drift over rounds."""

import csv
import html
import io
import re
from collections import Counter

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils.html import escape

from accounts.models import Track
from alignment.engine.alt_test import DESIGN_CONDITIONS, MAY_REPLACE, NOT_TESTED
from alignment.engine.design import design_variance, hajek_mean
from alignment.engine.ppi import MIN_ANNOTATED
from alignment.services import reports as reports_service
from alignment.services.corrected import corrected_rows
from alignment.services.design import RECONSTRUCTED, RECORDED, RECORDED_GREEDY, study_design
from alignment.services.frames import study_frames
from alignment.services.reports import ReportFilters, compute_report, study_report
from annotation.models import Assignment, StudyItem
from jury.models import RubricResult
from tests.alignment.conftest import annotate_study
from tests.alignment.engine.test_alt_test import published_style, run
from tests.annotation.conftest import annotators, new_study
from tests.support.text import squashed

pytestmark = pytest.mark.django_db
RUBRIC = "clinical_safety"


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def _report(study, **filters):
    return compute_report(study, ReportFilters(**filters), resamples=60)


def _section(report, rubric=RUBRIC):
    return next(s for s in report.sections if s.rubric.rubric_id == rubric)


def _rescore(study, item, rubric: str, score: int) -> None:
    """Every clinician on the item gives `score` on the rubric."""
    for assignment in Assignment.objects.filter(item=item, track=Track.CLINICAL):
        assignment.scores = assignment.scores | {rubric: score}
        assignment.save(update_fields=["scores"])


def _jury_mean(job, item, rubric=RUBRIC) -> float:
    return RubricResult.objects.get(job=job, conversation=item.conversation, rubric_id=rubric).mean


def test_every_figure_comes_twice_with_the_same_counts(annotated_study):
    report = _report(annotated_study)
    assert report.weighted and report.design_source == RECORDED
    for section in [*report.sections, *report.realism]:
        assert section.weighted is not None and section.weighted.weighted
        assert section.weighted.n_items == section.agreement.n_items
        assert (
            section.weighted.human_adjacent.n_ratings == section.agreement.human_adjacent.n_ratings
        )
    assert _section(report).weighted_judges is not None


def test_a_heavily_weighted_disagreement_pulls_the_population_figure_down(
    annotated_study, scored_job
):
    items = list(annotated_study.items.order_by("position"))
    far = items[0]
    _rescore(annotated_study, far, RUBRIC, 1 if _jury_mean(scored_job, far) >= 3 else 5)
    StudyItem.objects.filter(study=annotated_study).update(inclusion_probability=1.0)
    StudyItem.objects.filter(pk=far.pk).update(inclusion_probability=0.01)  # stands for 100
    section = _section(_report(annotated_study))
    n = section.agreement.jury_adjacent.n_items
    assert section.agreement.jury_adjacent.value == pytest.approx((n - 1) / n)
    assert section.weighted.jury_adjacent.value == pytest.approx((n - 1) / (n - 1 + 100))


def test_an_older_study_gets_its_weights_and_population_back_from_its_coverage(annotated_study):
    recorded = study_design(annotated_study)
    StudyItem.objects.filter(study=annotated_study).update(
        jury_bins={}, inclusion_probability=None, cell_available=None, cell_drawn=None
    )
    keep = ("model", "rubric", "bin", "available", "sampled")
    annotated_study.coverage["cells"] = [
        {k: cell[k] for k in keep} for cell in annotated_study.coverage["cells"]
    ]
    annotated_study.coverage.pop("design")
    annotated_study.save(update_fields=["coverage"])
    rebuilt = study_design(annotated_study)
    assert rebuilt.source == RECONSTRUCTED and rebuilt.weighted
    assert rebuilt.bins == recorded.bins
    assert rebuilt.weights == pytest.approx(recorded.weights)
    assert rebuilt.population.keys() == recorded.population.keys()
    for key, population in recorded.population.items():
        assert rebuilt.population[key].n == population.n
        assert rebuilt.population[key].jury_sum == pytest.approx(population.jury_sum)
    report = _report(annotated_study)
    assert report.design_source == RECONSTRUCTED


def test_an_older_study_whose_pool_has_changed_keeps_its_weights_but_not_its_population(
    annotated_study,
):
    StudyItem.objects.filter(study=annotated_study).update(jury_bins={}, inclusion_probability=None)
    cells = annotated_study.coverage["cells"]
    for cell in cells:
        for name in ("expected", "jury_sum", "jury_squares", "passed"):
            cell.pop(name)
    annotated_study.coverage.pop("design")
    grown = next(cell for cell in cells if cell["available"])
    grown["available"] += 10  # the pool the study drew from held more than today's
    annotated_study.save(update_fields=["coverage"])
    design = study_design(annotated_study)
    assert design.weighted and design.source == RECONSTRUCTED
    assert not design.population and "no longer the same" in design.population_reason
    report = _report(annotated_study)
    assert report.corrected and all(
        "no longer the same" in row.score.corrected_mean.undefined for row in report.corrected
    )


def test_a_study_without_a_recorded_design_shows_the_sample_only_and_says_why(
    annotated_study, researcher_client
):
    StudyItem.objects.filter(study=annotated_study).update(inclusion_probability=None)
    annotated_study.coverage = {}
    annotated_study.save(update_fields=["coverage"])
    report = _report(annotated_study)
    assert not report.weighted and "no sampling coverage" in report.design_reason
    assert all(section.weighted is None for section in report.sections)
    assert all(row.score.corrected_mean.value is None for row in report.corrected)
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    assert "sample only" in page.content.decode()
    assert "no sampling coverage" in page.content.decode()


def test_the_corrected_score_is_the_populations_jury_mean_plus_the_weighted_difference(
    annotated_study, scored_job
):
    items = list(annotated_study.items.order_by("position").select_related("conversation"))
    for item in items[:2]:  # the clinicians move away from the jury on two conversations
        _rescore(annotated_study, item, RUBRIC, 1 if _jury_mean(scored_job, item) >= 3 else 5)
    report = _report(annotated_study)
    model = items[0].conversation.run_agent.label
    shown = next(r for r in report.corrected if r.model == model and r.rubric.rubric_id == RUBRIC)
    assert shown.score.corrected_mean.value is None  # a few conversations: below the minimum
    assert f"needs at least {MIN_ANNOTATED}" in shown.score.corrected_mean.undefined
    # The same figure with the minimum lowered to one conversation, by hand.
    frames = study_frames(annotated_study)
    rows = corrected_rows(
        frames, study_design(annotated_study), frames.judged_rubrics, [model], min_annotated=1
    )
    row = next(r for r in rows if r.rubric.rubric_id == RUBRIC)
    # By hand: the population is every feasible conversation of the model the job scored.
    population = RubricResult.objects.filter(
        job=scored_job, rubric_id=RUBRIC, conversation__run_agent__label=model,
        conversation__entry__infeasible=False,
    ).values_list("mean", flat=True)  # fmt: skip
    jury_mean = float(np.mean(list(population)))
    own = [i for i in items if i.conversation.run_agent.label == model]
    design = study_design(annotated_study)
    differences, weights, strata = [], [], []
    for item in own:
        scores = [a.scores[RUBRIC] for a in Assignment.objects.filter(item=item, track="clinical")]
        differences.append(np.mean(scores) - _jury_mean(scored_job, item))
        weights.append(1 / item.inclusion_probability)
        strata.append(design.stratum(item.conversation_id, _section(report).rubric))
    correction = hajek_mean(differences, weights)
    assert row.score.n_population == len(population) and row.score.n_annotated == len(own)
    assert row.score.jury_mean.value == pytest.approx(jury_mean)
    assert row.score.corrected_mean.value == pytest.approx(jury_mean + correction)
    assert abs(correction) > 0.05  # the clinicians moved away from the jury
    if row.score.correction.low is not None:
        half = row.score.correction.high - row.score.correction.value
        assert half == pytest.approx(
            1.959964 * np.sqrt(design_variance(differences, weights, strata)), rel=1e-5
        )


def test_a_model_without_an_annotated_conversation_has_no_corrected_score(annotated_study):
    Assignment.objects.filter(item__study=annotated_study).delete()
    report = _report(annotated_study)
    assert report.corrected
    for row in report.corrected:
        assert row.score.corrected_mean.value is None
        assert "no conversation of this model has a clinician score" in (
            row.score.corrected_mean.undefined
        )
        assert row.score.jury_mean.value is not None  # the jury's own figure stays


def test_the_alt_test_and_judge_bias_come_with_every_rubric(annotated_study):
    report = _report(annotated_study)
    for section in report.sections:
        test = section.alt_test
        # 2 clinicians with 8 conversations: nobody tested, and the design is short.
        assert test.verdict == NOT_TESTED and test.needs and test.design_warning
        assert test.epsilon == annotated_study.alt_test_epsilon
        rows = {bias.judge for bias in section.bias}
        assert rows == {*section.judge_models, "jury"}
        scripted = next(b for b in section.bias if b.judge != "jury")
        assert "offline script" in scripted.family_note


def test_the_authors_verdict_shows_with_the_design_warning_beside_it(
    annotated_study, researcher_client, monkeypatch
):
    # The independent check's case: a winning rate of at least 0.5 on a design short of this
    # project's conditions (two clinicians per conversation) read "not passed".
    rows, jury = published_style(n_items=80, n_clinicians=4, per_item=2, jury_noise=0.2, seed=6)
    result = run(rows, jury, epsilon=0.2)
    assert result.winning_rate >= 0.5 and result.needs
    monkeypatch.setattr(reports_service, "alt_test", lambda *args, **options: result)
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    table = squashed(page).split('id="alt-test-table"')[1].split("</table>")[0]
    assert table.count(f'<span class="badge ok">{MAY_REPLACE}</span>') == 6
    warning = f"The design is short of {DESIGN_CONDITIONS}"
    assert table.count(f'<span class="badge warn">{escape(warning)}</span>') == 6
    rubric = squashed(
        researcher_client.get(reverse("alignment:rubric", args=[annotated_study.pk, RUBRIC]))
    )
    assert f'<span class="badge ok">{MAY_REPLACE}</span>' in rubric and escape(warning) in rubric
    export = researcher_client.get(
        reverse("alignment:table_export", args=[annotated_study.pk, "alt-test", "csv"])
    ).content.decode()
    summary = [r for r in csv.DictReader(io.StringIO(export)) if r["Row"] == "rubric"]
    assert {r["Verdict"] for r in summary} == {MAY_REPLACE}
    assert all(r["Design warning"].startswith(f"{warning}: needs ") for r in summary)
    assert all("overlap to 3" in r["Design warning"] for r in summary)


def test_each_clinicians_leave_one_out_agreement_is_on_the_report(
    annotated_study, researcher_client
):
    report = _report(annotated_study)
    raters = {figure.rater for figure in report.annotator_quality}
    assert raters == set(report.raters)
    assert all(figure.period == "all" for figure in report.annotator_quality)
    assert report.annotator_weeks and all("-W" in f.period for f in report.annotator_weeks)
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    body = page.content.decode()
    assert 'id="annotator-quality-table"' in body and 'id="alt-test-table"' in body
    assert 'id="corrected-table"' in body


def test_a_clinician_whose_bias_swings_between_rounds_is_flagged(scored_job, researcher_client):
    first, second = annotators(Track.CLINICAL, 2, prefix="drift")
    operators = annotators(Track.OPERATIONAL, 2, prefix="drift-op")
    round_one = new_study(scored_job, name="Round 1", kind="calibration", size=3,
                          drift_flag_points=0.5)  # fmt: skip
    target = new_study(scored_job, name="Main", size=8, drift_flag_points=0.5)
    # Offsets 0 then -1: in round 1 the first clinician scores a point above the second, in
    # the target study a point below.
    annotate_study(round_one, scored_job, {Track.CLINICAL: [first, second],
                                           Track.OPERATIONAL: operators})  # fmt: skip
    annotate_study(target, scored_job, {Track.CLINICAL: [second, first],
                                        Track.OPERATIONAL: operators})  # fmt: skip
    page = researcher_client.get(reverse("alignment:drift", args=[target.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    flags = body.split('id="drift-table"')[0]
    assert re.search(r"drift-0: bias vs the other clinicians moved by -1\.\d\d points from "
                     r"Round 1 to Main \(flag at 0\.5\)", flags)  # fmt: skip
    assert "drift-1: bias vs the other clinicians moved by +1." in flags
    assert "drift-op-0" not in flags and "drift-op-1" not in flags  # operators stayed put
    export = researcher_client.get(reverse("alignment:drift_export", args=[target.pk, "csv"]))
    assert "bias moved" in export.content.decode()


def test_every_new_table_exports_with_its_intervals(annotated_study, researcher_client):
    for table in ("weighted", "alt-test", "corrected", "judge-bias", "annotators"):
        for fmt in ("csv", "md", "tex"):
            url = reverse("alignment:table_export", args=[annotated_study.pk, table, fmt])
            response = researcher_client.get(url)
            assert response.status_code == 200, (table, fmt)
            text = response.content.decode()
            assert "[" in text, (table, fmt)  # every figure carries its interval
            if fmt == "tex":
                assert f"tab:study-{annotated_study.pk}-{table}" in text
    weighted = researcher_client.get(
        reverse("alignment:table_export", args=[annotated_study.pk, "weighted", "csv"])
    ).content.decode()
    assert "Population-weighted" in weighted and "Jury-clinician adjacent" in weighted
    missing = reverse("alignment:table_export", args=[annotated_study.pk, "nonsense", "csv"])
    assert researcher_client.get(missing).status_code == 404


def test_study_study_report_is_cached_with_every_new_figure(annotated_study):
    first = study_report(annotated_study, resamples=30)
    again = study_report(annotated_study, resamples=30)
    assert again.corrected == first.corrected and again.sections[0].alt_test is not None


def test_an_exact_design_gives_every_rubric_the_items_design_stratum(annotated_study):
    design = study_design(annotated_study)
    report = _report(annotated_study)
    rubrics = [s.rubric for s in report.sections] + [s.rubric for s in report.realism]
    for item in annotated_study.items.all():
        assert item.stratum["key"]
        assert {design.stratum(item.conversation_id, r) for r in rubrics} == {item.stratum["key"]}


def test_a_study_of_the_greedy_sampler_keeps_its_weights_and_says_they_are_approximate(
    annotated_study, researcher_client
):
    StudyItem.objects.filter(study=annotated_study).update(inclusion_probability=0.5)
    annotated_study.coverage.pop("design")
    annotated_study.save(update_fields=["coverage"])
    design = study_design(annotated_study)
    assert design.source == RECORDED_GREEDY and design.weighted
    assert set(design.weights.values()) == {2.0}
    item = annotated_study.items.select_related("conversation__run_agent").first()
    rubric = _section(_report(annotated_study)).rubric
    model = item.conversation.run_agent.label  # its cell of this rubric, as the study had it
    assert design.stratum(item.conversation_id, rubric) == (
        f"{model} | jury {item.jury_bins[RUBRIC]}"
    )
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    assert "approximate: the study was drawn by the earlier greedy sampler" in (
        page.content.decode()
    )


def test_the_tables_say_which_strata_the_intervals_pooled_and_why(
    annotated_study, researcher_client
):
    report = _report(annotated_study)
    design = study_design(annotated_study)
    section = _section(report)
    rated = annotated_study.items.values_list("conversation_id", flat=True)
    strata = Counter(design.stratum(item, section.rubric) for item in rated)
    lone = sorted(stratum for stratum, count in strata.items() if count == 1)
    assert len(lone) >= 2, "the fixture's design has strata holding one conversation"
    note = section.weighted.pooled_strata
    assert f"{len(lone)} strata held one conversation each" in note
    assert all(stratum in note for stratum in lone)
    assert "needs two conversations" in note

    cache.clear()
    page = researcher_client.get(reverse("alignment:report", args=[annotated_study.pk]))
    text = html.unescape(page.content.decode())
    assert f"Population-weighted intervals: {note}." in text
    export = researcher_client.get(
        reverse("alignment:table_export", args=[annotated_study.pk, "weighted", "csv"])
    ).content.decode()
    assert f"population interval: {note}" in export
    corrected = next(row for row in report.corrected if row.pooled_strata)
    assert f"Correction interval: {corrected.pooled_strata}." in text
    table = researcher_client.get(
        reverse("alignment:table_export", args=[annotated_study.pk, "corrected", "csv"])
    ).content.decode()
    assert f"correction interval: {corrected.pooled_strata}" in table
