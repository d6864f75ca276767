"""Re-scoring a study's annotated conversations with another jury configuration: scope,
rubric versions, judge prompt variants and the response cache."""

import pytest

from alignment.services import rescoring as loop
from jury.models import ConversationResult, JudgeScore, RubricResult, RubricVersion
from jury.services import juries, rubrics, scoring
from tests.alignment.loop_support import constructed_study, judged_versions, rescored

VARIANT_NOTE = "Read the whole trace twice before you score."


def revised(rubric_id: str) -> RubricVersion:
    old = RubricVersion.objects.get(rubric_id=rubric_id, is_current=True)
    text = old.yaml_text.replace("name: Clinical Safety", "name: Clinical Safety (revised)")
    return rubrics.rubric_version_create(rubric_id=rubric_id, yaml_text=text, note="loop test")


def means(job, study=None) -> dict:
    """(conversation, rubric) -> jury mean of the job, on the study's conversations if given."""
    results = RubricResult.objects.filter(job=job)
    if study is not None:
        results = results.filter(conversation__study_items__study=study)
    return {(r.conversation_id, r.rubric_id): r.mean for r in results}


def variant_template() -> str:
    shipped = scoring.shipped_judge_template_text()
    return shipped.replace("<!-- user -->", f"{VARIANT_NOTE}\n\n<!-- user -->", 1)


@pytest.mark.django_db
def test_rescoring_judges_only_the_annotated_conversations_on_the_chosen_versions(scored_job):
    study = constructed_study(scored_job, annotated_items=3)
    annotated = set(study.items.order_by("position")[:3].values_list("conversation_id", flat=True))
    safety_v2 = revised("clinical_safety")
    triage_v1 = RubricVersion.objects.get(rubric_id="triage_quality", version=1)
    jury = juries.jury_demo_ensure()

    jobs = loop.study_rescore(study, jury=jury, rubric_versions=[safety_v2, triage_v1])

    assert len(jobs) == 1 and jobs[0].run == scored_job.run
    scores = JudgeScore.objects.filter(job=jobs[0])
    assert set(scores.values_list("conversation_id", flat=True)) == annotated
    assert set(scores.values_list("rubric_version", flat=True)) == {safety_v2.pk, triage_v1.pk}
    assert scores.count() == 3 * 2 * len(jury.judges)
    assert set(jobs[0].conversations.values_list("pk", flat=True)) == annotated


@pytest.mark.django_db
def test_a_rescore_of_some_rubrics_aggregates_over_those_rubrics(scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    safety = RubricVersion.objects.get(rubric_id="clinical_safety", is_current=True)
    (job,) = rescored(study, juries.jury_demo_ensure(), [safety])

    results = ConversationResult.objects.filter(job=job)
    assert results.count() == 2 and all(result.complete for result in results)
    for result in results:
        mean = RubricResult.objects.get(job=job, conversation=result.conversation).mean
        assert result.aggregate == pytest.approx(mean)
    assert job.status == "finished"


@pytest.mark.django_db
def test_an_identical_configuration_replays_the_cache_without_a_model_call(scored_job):
    study = constructed_study(scored_job)
    (job,) = rescored(study, scored_job.jury, list(scored_job.rubric_versions.all()))

    scores = JudgeScore.objects.filter(job=job)
    assert scores.count() == study.items.count() * 6 * 2
    assert scores.filter(cached=False).count() == 0
    assert means(job) and means(job) == means(scored_job, study)


@pytest.mark.django_db
def test_a_prompt_variant_changes_the_cache_key_and_the_prompt(scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    versions = list(scored_job.rubric_versions.all())
    (job,) = rescored(study, scored_job.jury, versions, judge_template=variant_template())

    assert job.judge_template == variant_template()
    scores = JudgeScore.objects.filter(job=job)
    assert scores.count() == 2 * 6 * 2 and not scores.filter(cached=True).exists()
    for score in scores[:5]:
        first = JudgeScore.objects.get(
            job=scored_job, conversation=score.conversation,
            rubric_version=score.rubric_version, judge_index=score.judge_index,
        )  # fmt: skip
        assert score.prompt_hash and score.prompt_hash != first.prompt_hash
    request = scoring.judge_request(
        conversation=scores[0].conversation,
        rubric=rubrics.rubric_of(scores[0].rubric_version),
        judge_model="offline/standard",
        template=scoring.job_judge_template(job),
    )
    assert VARIANT_NOTE in request.system


@pytest.mark.django_db
def test_an_unchanged_copy_of_the_shipped_prompt_is_the_shipped_configuration(scored_job):
    study = constructed_study(scored_job, annotated_items=1)
    (job,) = loop.study_rescore(
        study, jury=scored_job.jury, rubric_versions=judged_versions(study),
        judge_template=scoring.shipped_judge_template_text(),
    )  # fmt: skip
    assert job.judge_template == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace("$trace", "$transcript"), "unknown placeholder(s): transcript"),
        (lambda t: t.replace("<!-- user -->", ""), "exactly one <!-- system -->"),
    ],
)
def test_a_broken_prompt_variant_is_refused_with_the_reason(scored_job, change, message):
    study = constructed_study(scored_job, annotated_items=1)
    with pytest.raises(scoring.ScoringError, match="Judge prompt") as refused:
        loop.study_rescore(
            study, jury=scored_job.jury, rubric_versions=judged_versions(study),
            judge_template=change(scoring.shipped_judge_template_text()),
        )  # fmt: skip
    assert message in str(refused.value)


@pytest.mark.django_db
def test_a_study_nobody_annotated_cannot_be_rescored(scored_job):
    study = constructed_study(scored_job, annotated_items=0)
    with pytest.raises(scoring.ScoringError, match="No conversation of this study"):
        loop.study_rescore(study, jury=scored_job.jury, rubric_versions=judged_versions(study))
    assert not loop.rescore_jobs(study)


@pytest.mark.django_db
def test_rubric_version_choices_that_cannot_be_scored_are_refused(scored_job):
    study = constructed_study(scored_job, annotated_items=1)
    safety = RubricVersion.objects.get(rubric_id="clinical_safety", version=1)
    realism = RubricVersion.objects.filter(kind="realism").first()
    zero = juries.jury_create(
        name="Safety weightless", judges=["offline/standard"],
        weights={**rubrics.current_weights(), "clinical_safety": 0.0},
    )  # fmt: skip
    cases = [
        (scored_job.jury, [], "at least one rubric version"),
        (scored_job.jury, [realism], "clinicians only"),
        (scored_job.jury, [safety, revised("clinical_safety")], "one version per rubric"),
        (zero, [safety], "weight 0"),
    ]
    for jury, versions, message in cases:
        with pytest.raises(scoring.ScoringError, match=message):
            loop.study_rescore(study, jury=jury, rubric_versions=versions)


@pytest.mark.django_db
def test_a_job_cannot_be_restricted_to_unfinished_or_no_conversations(scored_job):
    other = scored_job.run.conversations.first()
    other.status = "failed"
    other.save(update_fields=["status"])
    with pytest.raises(scoring.ScoringError, match="1 of the 1 conversations are not finished"):
        scoring.scoring_launch(run=scored_job.run, jury=scored_job.jury, conversations=[other])
    with pytest.raises(scoring.ScoringError, match="restricted to no conversation"):
        scoring.scoring_launch(run=scored_job.run, jury=scored_job.jury, conversations=[])


@pytest.mark.django_db
def test_the_job_page_shows_the_scope_and_the_prompt_variant(scored_job, researcher_client):
    from django.urls import reverse

    study = constructed_study(scored_job, annotated_items=2)
    (job,) = loop.study_rescore(
        study, jury=scored_job.jury, rubric_versions=judged_versions(study),
        judge_template=variant_template(),
    )  # fmt: skip
    page = researcher_client.get(reverse("jury:job", args=[job.pk])).content.decode()
    assert "2 chosen conversations of the run" in page and VARIANT_NOTE in page
    original = researcher_client.get(reverse("jury:job", args=[scored_job.pk])).content.decode()
    assert "chosen conversation" not in original and "the shipped template" in original


@pytest.mark.django_db
def test_the_jury_report_pages_open_for_a_rescore_of_one_rubric(scored_job, researcher_client):
    from django.urls import reverse

    study = constructed_study(scored_job, annotated_items=2)
    safety = RubricVersion.objects.get(rubric_id="clinical_safety", is_current=True)
    (job,) = rescored(study, juries.jury_demo_ensure(), [safety])
    for page in ("jury:job", "jury:report", "jury:judges", "jury:failures", "jury:sensitivity"):
        response = researcher_client.get(reverse(page, args=[job.pk]))
        assert response.status_code == 200, page
    counts = researcher_client.get(reverse("jury:job", args=[job.pk])).content.decode()
    assert "2 complete · 0 incomplete" in counts and "0 awaiting" in counts
