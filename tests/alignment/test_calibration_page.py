"""The study's calibration page: variants measured held out beside the current jury, scoring
the examples variant with fold juries, promoting a variant and re-scoring with it."""

import pandas as pd
import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.services import calibration
from alignment.services import rescoring as loop
from alignment.services.figures import learning_curve_figure
from audit.models import AuditEvent
from jury.models import Jury, ScoringJob
from tests.alignment.loop_support import constructed_study
from tests.jury.services.builders import score_now

FEEDBACK = "Booked without confirming the time with the patient."


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(scored_job):
    return constructed_study(scored_job)


def page_url(study) -> str:
    return reverse("alignment:calibration", args=[study.pk])


@pytest.mark.django_db
def test_the_page_sets_every_variant_beside_the_current_jury(researcher_client, study):
    page = researcher_client.get(page_url(study)).content.decode()

    assert "Every figure is cross-fitted" in page
    assert 'id="variants-clinical_safety"' in page
    for variant in calibration.engine.VARIANTS.values():
        assert variant.label in page
    assert "not scored with examples yet" in page and "Score with examples…" in page
    assert 'id="learning-curve-figure"><svg' in page
    assert (
        page.count("Promote to a new jury version")
        == 5 * study.rubric_versions.filter(kind="dimension").count()
    )


@pytest.mark.django_db
def test_annotators_are_refused_and_nothing_is_promoted(client, annotator, study):
    client.force_login(annotator)
    promote = reverse("alignment:calibration_promote", args=[study.pk])

    assert client.get(page_url(study)).status_code == 403
    assert client.post(promote, {"variant": "weights"}).status_code == 403
    assert not Jury.objects.filter(base__isnull=False).exists()


@pytest.mark.django_db
def test_promoting_a_variant_creates_a_version_that_learned_from_every_rated_item(
    researcher_client, study
):
    rated = set(loop.annotated_conversations(study).values_list("pk", flat=True))
    promote = reverse("alignment:calibration_promote", args=[study.pk])

    response = researcher_client.post(promote, {"variant": "weights_map"})

    assert response.status_code == 302
    version = Jury.objects.get(learned_from__purpose="promoted")
    assert version.base == calibration.study_jury(study) and version.version == 2
    assert version.learned_items == rated
    assert version.learned_from["variant"] == "weights_map"
    # Each judged rubric belongs to one track, whose two clinicians score it.
    assert version.learned_from["n_ratings"] == len(rated) * 2 * 6
    assert AuditEvent.objects.filter(action="jury.version_created").count() == 1
    page = researcher_client.get(page_url(study)).content.decode()
    assert version.name in page and "Re-score the study with it" in page


@pytest.mark.django_db
def test_current_is_not_a_variant_one_can_promote(researcher_client, study):
    promote = reverse("alignment:calibration_promote", args=[study.pk])
    response = researcher_client.post(promote, {"variant": "current"}, follow=True)

    assert "not a calibration variant that can be promoted" in response.content.decode()
    assert not Jury.objects.filter(base__isnull=False).exists()


@pytest.mark.django_db
def test_rescoring_with_a_promoted_version_launches_the_loop(researcher_client, study):
    version = calibration.variant_promote(study, variant="aggregate_map")
    rescore = reverse("alignment:calibration_rescore", args=[study.pk])

    response = researcher_client.post(rescore, {"jury": version.pk})

    assert response["Location"] == reverse("alignment:loop_comparison", args=[study.pk])
    (job,) = loop.rescore_jobs(study)
    assert job.jury == version
    stranger = Jury.objects.exclude(pk=version.pk).first()
    refused = researcher_client.post(rescore, {"jury": stranger.pk}, follow=True)
    assert "was not promoted from this study" in refused.content.decode()


@pytest.mark.django_db
def test_the_examples_button_shows_the_judge_calls_first(researcher_client, study):
    url = reverse("alignment:calibration_examples", args=[study.pk])
    page = " ".join(researcher_client.get(url).content.decode().split())

    judges = len(calibration.study_jury(study).judges)
    calls = 6 * judges * 6
    assert f"<strong>{calls}</strong> judge calls = 6 held-out conversations × {judges}" in page
    assert "estimated cost <strong>$0.0000</strong>" in page  # the offline judges cost nothing
    assert not ScoringJob.objects.filter(jury__learned_from__purpose="fold").exists()


@pytest.mark.django_db
def test_scoring_with_examples_makes_one_fold_jury_per_fold_scoring_only_its_fold(
    researcher_client, study
):
    url = reverse("alignment:calibration_examples", args=[study.pk])

    assert researcher_client.post(url).status_code == 302

    folds = list(Jury.objects.filter(learned_from__purpose="fold").order_by("pk"))
    assert len(folds) == calibration.engine.FOLDS
    scored = []
    for fold in folds:
        (job,) = fold.jobs.all()
        held_out = set(job.conversations.values_list("pk", flat=True))
        examples = fold.calibration_data().example_conversations()
        assert examples and not examples & held_out  # no conversation sees its own scores
        assert held_out.isdisjoint(fold.learned_items)
        scored += held_out
    rated = set(loop.annotated_conversations(study).values_list("pk", flat=True))
    assert sorted(scored) == sorted(rated)
    assert researcher_client.post(url, follow=True).status_code == 200
    assert Jury.objects.filter(learned_from__purpose="fold").count() == len(folds)


@pytest.mark.django_db
def test_fold_jobs_stay_off_the_rescoring_page_and_fill_the_examples_row(researcher_client, study):
    jobs = calibration.examples_launch(study)
    polling = researcher_client.get(page_url(study)).content.decode()
    assert "Scoring with examples: the fold juries" in polling and "pending" in polling
    assert not calibration.calibration_page(study).examples_measured  # not while jobs run

    for job in jobs:
        score_now(job)

    assert [c for c in loop.study_configurations(study) if not c.original] == []
    assert (
        "Prompt examples"
        not in researcher_client.get(
            reverse("alignment:loop_rescore", args=[study.pk])
        ).content.decode()
    )
    page = calibration.calibration_page(study)
    assert page.examples_measured
    examples = next(row for row in page.sections[0].rows if row.variant.key == "examples")
    assert examples.evaluation.agreement.jury_adjacent.n_items == 6


@pytest.mark.django_db
def test_feedback_of_several_clinicians_is_joined_per_conversation(study):
    assignment = study.items.first().assignments.filter(status="submitted")[:2]
    for index, each in enumerate(assignment):
        each.feedback = {"clinical_safety": f"{FEEDBACK} ({index})"}
        each.save()
    item = study.items.first().conversation_id

    feedback = calibration.clinician_feedback(study, {"clinical_safety"}, include_synthetic=False)

    text = feedback[(item, "clinical_safety")]
    assert f"{FEEDBACK} (0)" in text and f"{FEEDBACK} (1)" in text


def test_the_learning_curve_figure_draws_a_line_per_rubric():
    curve = pd.DataFrame(
        {
            "rubric": ["a", "a", "b", "b"],
            "n_train": [10, 20, 10, 20],
            "adjacent": [0.6, 0.8, 0.5, 0.7],
            "mean_abs_diff": [1.1, 0.7, 1.2, 0.9],
        }
    )
    figure = learning_curve_figure(curve, names={"a": "Safety", "b": "Triage"}, title="t")
    left, right = figure.axes
    assert [line.get_label() for line in left.lines] == ["Safety", "Triage"]
    assert list(right.lines[0].get_ydata()) == [1.1, 0.7]


@pytest.mark.django_db
def test_the_examples_estimate_prices_the_example_conversations_each_call_carries(study):
    from decimal import Decimal

    from llm.services.prices import price_set

    jury = calibration.study_jury(study)
    for model in jury.judges:
        price_set(model=model, input_per_million=Decimal(1), output_per_million=Decimal(0))
    inputs = calibration.calibration_inputs(study)
    cost = calibration.examples_cost(study, inputs)
    per_score = calibration._tokens_per_score(study)

    assert cost.example_tokens > 0
    plain = sum(per_score[model][0] for model in jury.judges) * cost.calls / len(jury.judges)
    with_examples = plain + cost.example_tokens * cost.calls
    # $1 a million input tokens, output free: the estimate is the input tokens with examples.
    assert float(cost.cost) == pytest.approx(with_examples / 1_000_000, rel=1e-3)
    # example_tokens is shown rounded; the call's tokens are rounded once, from the exact sum.
    longest = max(per_score[m][0] for m in jury.judges)
    assert abs(cost.input_tokens - (longest + cost.example_tokens)) <= 1
