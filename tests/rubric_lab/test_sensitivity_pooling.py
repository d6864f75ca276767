"""The pooled "all types" figure of a sensitivity study: types scored on too few references
are named and left out, the interval resamples references; and the first window of pairs the
workers get spans different references."""

import pytest

from rubric_lab.models import JudgeSetup, NearMissStatus
from rubric_lab.services import sensitivity

pytestmark = pytest.mark.django_db


def study_with_scores(run, **options):
    """A pairwise study whose pairs are given scores directly: type A scored on every
    reference, type B on one only (the others do not apply)."""
    study = sensitivity.study_launch(
        run=run, setup=JudgeSetup.PAIRWISE, judge_model="offline/standard",
        perturber_model="offline/surgical", perturbations=["swap_dose", "downgrade_urgency"],
        **options,
    )  # fmt: skip
    references = sorted(set(study.pairs.values_list("conversation_id", flat=True)))
    for number, pair in enumerate(study.pairs.order_by("conversation_id", "kind")):
        scored = pair.kind == "swap_dose" or pair.conversation_id == references[0]
        pair.status = NearMissStatus.SCORED if scored else NearMissStatus.NOT_APPLICABLE
        pair.reference_score, pair.perturbed_score = (0.5 + number % 3 / 4, 0.5) if scored else (
            None, None)  # fmt: skip
        pair.reference_first = pair.reference_second = 1.0 if scored else None
        pair.save()
    return study, len(references)


def test_a_type_scored_on_too_few_references_is_named_and_left_out_of_the_pool(played_run):
    study, references = study_with_scores(played_run, min_type_references=5, min_type_share=1.0)

    results = {row["kind"]: row for row in sensitivity.study_results(study)}

    assert references >= 2
    assert "too_few" not in results["swap_dose"]
    assert results["downgrade_urgency"]["too_few"] == (
        f"Scored on 1 of {references} references; a type needs at least {min(5, references)} "
        "to count in the pooled figure."
    )
    pooled = results["all"]
    assert pooled["left_out"] == ["Downgrade the urgency"]
    assert pooled["sensitivity"].n == references  # swap_dose's pairs only
    assert pooled["sensitivity"].clusters == references
    assert pooled["counts"] == {"scored": references}
    table = sensitivity.results_table(study, list(results.values()))
    assert (
        "Left out (scored on too few references): Downgrade the urgency" in table.iloc[-1]["note"]
    )


def test_every_type_counts_when_it_reaches_the_studys_minimum(played_run):
    study, references = study_with_scores(played_run, min_type_references=1, min_type_share=0.0)

    pooled = sensitivity.study_results(study)[-1]

    assert pooled["left_out"] == [] and pooled["sensitivity"].n == references + 1


def test_the_first_window_of_pairs_spans_different_references(played_run):
    study = sensitivity.study_launch(
        run=played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/standard",
        perturber_model="offline/surgical", concurrency=2,
    )  # fmt: skip

    sent = sensitivity.study_dispatch(study, send=lambda tasks: None)

    conversations = {study.pairs.get(pk=pk).conversation_id for pk, _ in sent}
    assert len(sent) == 2 and len(conversations) == 2
