"""Dashboard numbers on a constructed study, and the coverage table and heat map (pure)."""

import pytest
from django.utils import timezone

from annotation.engine.coverage import coverage_heatmaps, coverage_rows, shortfall_sentences
from annotation.models import AssignmentStatus
from annotation.services.dashboard import study_progress
from tests.annotation.conftest import annotators
from tests.annotation.staff_support import annotate


@pytest.fixture
def worked(study, clinicians, operators):
    """Clinical: c0 submits items 1-2, c1 submits item 1 and holds item 3, c2 skipped item 2,
    a trainee practises on item 4. Operational: o0 submits item 1, o1's work on item 1 was
    invalidated."""
    items = list(study.items.all())
    c0, c1, c2 = clinicians
    o0, o1 = operators[:2]
    trainee = annotators("clinical", 1, licensed=False, prefix="trainee")[0]
    annotate(items[0], c0, seconds_on_task=60)
    annotate(items[1], c0, seconds_on_task=120)
    annotate(items[0], c1, seconds_on_task=300)
    annotate(items[2], c1, status=AssignmentStatus.RESERVED, seconds_on_task=10)
    annotate(items[1], c2, status=AssignmentStatus.SKIPPED)
    annotate(items[3], trainee, seconds_on_task=45)
    annotate(items[0], o0, seconds_on_task=30)
    annotate(items[0], o1, seconds_on_task=999, invalidated_at=timezone.now())
    return study, items


def by_name(progress) -> dict:
    return {p["username"]: p["tally"] for p in progress["annotators"]}


@pytest.mark.django_db
def test_each_annotator_has_their_counts_and_times(worked):
    study, _ = worked
    people = by_name(study_progress(study))
    assert (people["clinical-0"].submitted, people["clinical-0"].median_seconds) == (2, 90)
    assert people["clinical-0"].total_seconds == 180
    assert (people["clinical-1"].submitted, people["clinical-1"].in_progress) == (1, 1)
    assert people["clinical-2"].skipped == 1
    assert people["operational-1"].invalidated == 1 and people["operational-1"].submitted == 0
    assert people["trainee-0"].submitted == 1


@pytest.mark.django_db
def test_each_track_counts_seats_filled_by_licensed_valid_work_only(worked):
    study, items = worked
    tracks = {t["track"]: t for t in study_progress(study)["tracks"]}
    clinical, operational = tracks["clinical"], tracks["operational"]
    assert clinical["needed"] == operational["needed"] == 2 * len(items)
    assert clinical["filled"] == 3  # item 1 twice, item 2 once; the trainee fills no seat
    assert operational["filled"] == 1
    assert clinical["tally"].submitted == 3 and clinical["tally"].in_progress == 1
    assert clinical["tally"].skipped == 1 and operational["tally"].invalidated == 1
    assert clinical["tally"].median_seconds == 120
    assert operational["tally"].submitted == 1


@pytest.mark.django_db
def test_items_missing_overlap_say_how_many_seats_each_track_lacks(worked):
    study, items = worked
    progress = study_progress(study)
    missing = {m["number"]: m for m in progress["missing"]}
    assert len(missing) == len(items)  # no item has its two operational annotations yet
    assert missing[1]["short"] == {"clinical": 0, "operational": 1}
    assert missing[2]["short"] == {"clinical": 1, "operational": 2}
    assert missing[3]["short"] == {"clinical": 2, "operational": 2}
    assert missing[3]["working"]["clinical"] == 1
    assert progress["complete_items"] == 0


@pytest.mark.django_db
def test_the_median_time_per_item_counts_submitted_valid_work(worked):
    study, _ = worked
    # 60, 120, 300, 45 (practice) and 30; the invalidated 999 and the draft's 10 do not count.
    assert study_progress(study)["median_seconds"] == 60


COVERAGE = {
    "models": ["m<1>", "m2"],
    "rubrics": ["safety"],
    "wanted_per_cell": 1,
    "cells": [
        {"model": m, "rubric": "safety", "bin": b, "available": a, "sampled": s}
        for m, counts in (
            ("m<1>", [(1, 1), (0, 0), (3, 2), (0, 0), (2, 1)]),
            ("m2", [(0, 0), (1, 1), (4, 1), (1, 1), (1, 1)]),
        )
        for b, (a, s) in enumerate(counts, start=1)
    ],  # fmt: skip
    "shortfalls": [
        {"model": "m<1>", "rubric": "safety", "bin": 2, "available": 0, "sampled": 0, "wanted": 1},
        {"model": "m<1>", "rubric": "safety", "bin": 4, "available": 0, "sampled": 0, "wanted": 1},
        {"model": "m2", "rubric": "safety", "bin": 1, "available": 0, "sampled": 0, "wanted": 1},
    ],
}


def test_the_coverage_table_has_five_bins_per_model_and_rubric():
    rows = coverage_rows(COVERAGE, {"safety": "Clinical Safety"})
    assert [(r.model, r.rubric_label) for r in rows] == [
        ("m<1>", "Clinical Safety"),
        ("m2", "Clinical Safety"),
    ]
    assert [(c.sampled, c.available, c.short) for c in rows[0].cells] == [
        (1, 1, False), (0, 0, True), (2, 3, False), (0, 0, True), (1, 2, False),
    ]  # fmt: skip


def test_each_shortfall_is_named_in_words():
    sentences = shortfall_sentences(COVERAGE, {"safety": "Clinical Safety"})
    assert sentences[0] == (
        "m<1> · Clinical Safety · jury score 2: 0 of 1 wanted (no conversation scored there)"
    )
    assert len(sentences) == 3


def test_the_heat_map_draws_one_grid_per_model_with_shortfalls_outlined_and_labels_escaped():
    maps = coverage_heatmaps(COVERAGE, {"safety": "CS"})
    assert [model for model, _ in maps] == ["m<1>", "m2"]
    first = maps[0][1]
    assert first.startswith("<svg") and "m&lt;1&gt;" in first and "m<1>" not in first
    assert first.count('<g class="short">') == 2 and first.count('<g class="met">') == 3
    assert maps[1][1].count('<g class="short">') == 1
    # The busiest cell (2 sampled) is the darkest shade; an empty cell is grey.
    assert 'fill="#1f6feb"' in first and 'fill="#f3f4f6"' in first
