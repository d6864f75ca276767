"""A study's second phase: conversations drawn with probability proportional to how much they
teach (judge disagreement, a jury mean near the threshold), each with a known chance, so the
population-weighted figures stay valid."""

from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from alignment.services.design import study_design
from annotation.engine.sampling import Design
from annotation.engine.second_phase import (
    combined_probability,
    pps_systematic,
    teaching,
)
from annotation.models import StudyStatus
from annotation.services.second_phase import SecondPhaseSpec, study_second_phase
from audit.models import AuditEvent
from tests.annotation.conftest import new_study

SIZES = {1: 0.1, 2: 0.4, 3: 1.0, 4: 2.5, 5: 0.2, 6: 0.8, 7: 9.0, 8: 0.3}


def test_each_conversation_is_drawn_as_often_as_its_probability_says():
    runs = 4000
    counts = Counter()
    design = None
    for seed in range(runs):
        design = pps_systematic(SIZES, draws=3, seed=seed)
        assert len(design.chosen) == 3 and len(set(design.chosen)) == 3
        counts.update(design.chosen)
    for key, size in SIZES.items():
        assert abs(counts[key] / runs - design.probability(size)) < 0.03, key
    assert sum(design.probability(size) for size in SIZES.values()) == pytest.approx(3)


def test_a_size_past_its_share_is_taken_for_certain_and_the_rest_shared_out():
    design = pps_systematic(SIZES, draws=3, seed=1)
    assert design.probability(SIZES[7]) == 1.0  # 9.0 of 14.3 would be more than one draw
    assert 7 in design.chosen
    rest = {key: size for key, size in SIZES.items() if key != 7}
    assert design.scale == pytest.approx(2 / sum(rest.values()))


def test_a_conversation_teaches_more_the_wider_its_judges_disagree_and_the_closer_its_verdict():
    calm = teaching({"safety": [4, 4, 4]}, {"safety": 4.0}, threshold=3.0)
    split = teaching({"safety": [1, 5, 3]}, {"safety": 3.0}, threshold=3.0)
    assert calm.spread == 0 and calm.nearness == pytest.approx(0.5)
    assert split.spread == pytest.approx((8 / 3) ** 0.5 / 2) and split.nearness == 1.0
    assert split.rubric == "safety"
    size = {"floor": 0.1, "spread_weight": 1.0, "nearness_weight": 1.0}
    assert split.size(**size) > calm.size(**size) > 0


def test_two_phases_combine_as_independent_chances():
    assert combined_probability(0.5, 0.5) == 0.75
    assert combined_probability(None, 0.2) == pytest.approx(0.2)
    assert combined_probability(1.0, 0.3) == 1.0


@pytest.mark.django_db
def test_a_second_phase_draws_over_the_whole_population_and_reweighs_the_first(
    scored_job, researcher
):
    study = new_study(scored_job, size=4)
    first = Design.from_coverage(study.coverage)
    before = dict(study.items.values_list("conversation_id", "inclusion_probability"))

    added = study_second_phase(study, spec=SecondPhaseSpec(draws=3, seed=3), actor=researcher)

    study.refresh_from_db()
    record = study.coverage["second_phase"]
    # Drawn over every conversation the study draws from, its own four included, so the
    # second phase's chances do not depend on which four the first phase took.
    assert record["pool"] == study.coverage["candidates"] > 4
    assert record["draws"] == 3 and record["added"] + record["already_in"] == 3
    assert len(added) == record["added"] and study.items.count() == 4 + len(added)
    assert {item.phase for item in added} <= {2}
    assert not set(before) & {item.conversation_id for item in added}
    for item in added:
        stratum = next(s for s in first.strata if s.key == item.stratum["key"])
        assert stratum.probability <= item.inclusion_probability <= 1
        assert item.jury_bins and item.stratum["phase"] == 2
    for item in study.items.filter(phase=1):
        assert item.inclusion_probability >= before[item.conversation_id]
    event = AuditEvent.objects.get(action="study.second_phase")
    assert event.actor == researcher and event.after["added"] == len(added)


@pytest.mark.django_db
def test_the_population_weights_take_in_the_second_phase(scored_job):
    study = new_study(scored_job, size=4)
    study_second_phase(study, spec=SecondPhaseSpec(draws=3, seed=1))

    design = study_design(study)

    assert design.weighted and design.source.startswith("recorded")
    probabilities = dict(study.items.values_list("conversation_id", "inclusion_probability"))
    assert design.weights == pytest.approx({cid: 1 / p for cid, p in probabilities.items()})


@pytest.mark.django_db
def test_a_second_phase_is_refused_where_it_would_break_the_design(scored_job):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    with pytest.raises(ValidationError, match="target studies"):
        study_second_phase(calibration, spec=SecondPhaseSpec(draws=1))
    study = new_study(scored_job, size=4, project="Other")
    with pytest.raises(ValidationError, match="between 1 and"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=0))
    with pytest.raises(ValidationError, match="some weight"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=1, spread_weight=0, nearness_weight=0))
    study_second_phase(study, spec=SecondPhaseSpec(draws=1))
    with pytest.raises(ValidationError, match="already"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=1))
    study.refresh_from_db()
    study.coverage.pop("second_phase")
    study.coverage.pop("design")  # a study the greedy sampler drew
    study.save(update_fields=["coverage"])
    with pytest.raises(ValidationError, match="before the sampler recorded an exact design"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=1))
    study.status = StudyStatus.LOCKED
    study.save(update_fields=["status"])
    with pytest.raises(ValidationError, match="locked"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=1))


@pytest.mark.django_db
def test_the_study_page_adds_a_second_phase_and_then_says_what_it_added(
    scored_job, researcher_client
):
    study = new_study(scored_job, size=4)
    page = reverse("annotation:staff_study", args=[study.pk])
    assert 'id="second-phase-form"' in researcher_client.get(page).content.decode()

    url = reverse("annotation:staff_study_second_phase", args=[study.pk])
    form = {"draws": 2, "spread_weight": 1, "nearness_weight": 0.5, "seed": 4}
    answer = researcher_client.post(url, form, follow=True)

    text = answer.content.decode()
    added = study.items.filter(phase=2).count()
    assert f"Added {added} conversation" in text and "to the study (second phase)." in text
    pool = study.coverage["candidates"]
    assert f"2 drawn over all {pool} conversations the study draws from" in text
    assert 'id="second-phase-form"' not in text
    again = researcher_client.post(url, form, follow=True).content.decode()
    assert "second phase already" in again and study.items.count() == 4 + added


@pytest.mark.django_db
def test_a_second_phase_is_refused_once_the_studys_population_has_changed(scored_job):
    study = new_study(scored_job, size=4)
    # A calibration round of the project now holds out conversations the study drew from.
    new_study(scored_job, name="Round 1", kind="calibration", size=2)
    with pytest.raises(ValidationError, match="have changed since its sample was drawn"):
        study_second_phase(study, spec=SecondPhaseSpec(draws=1))
    assert study.items.count() == 4


@pytest.mark.django_db
def test_a_bad_second_phase_form_says_what_is_wrong_and_adds_nothing(scored_job, researcher_client):
    study = new_study(scored_job, size=4)
    url = reverse("annotation:staff_study_second_phase", args=[study.pk])
    form = {"draws": 0, "spread_weight": 1, "nearness_weight": 1, "seed": 0}
    text = researcher_client.post(url, form, follow=True).content.decode()
    assert "draws:" in text and study.items.count() == 4
