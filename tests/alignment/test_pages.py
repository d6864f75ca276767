"""The alignment pages on annotated studies: what they show, and what they say when a figure
cannot be computed."""

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from accounts.models import Track
from alignment.services.themes import theme_tag
from annotation.models import Assignment
from jury.models import JudgeScore, RubricResult
from tests.alignment.conftest import annotate_study, jury_means, near_jury
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate
from tests.support.text import squashed

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


def page(client, name, *args, query=""):
    response = client.get(reverse(f"alignment:{name}", args=args) + query)
    assert response.status_code == 200, response.content[:300]
    return squashed(response)


def test_the_report_shows_the_agreement_table_with_n_and_intervals(
    researcher_client, annotated_study
):
    html = page(researcher_client, "report", annotated_study.pk)
    assert 'id="agreement-table"' in html
    for name in ("Clinical Safety", "Task Completion", "Patient Profile Realism"):
        assert name in html
    assert "n=6/12" in html  # six conversations, two ratings each per judged rubric
    assert 'class="ci">[' in html
    assert 'id="planner-table"' in html and 'id="judge-summary"' in html


def test_synthetic_work_is_left_out_and_counted_until_included(researcher_client, annotated_study):
    Assignment.objects.filter(item__study=annotated_study, annotator__username="clinical-0").update(
        synthetic=True
    )
    html = page(researcher_client, "report", annotated_study.pk)
    assert '<td>synthetic</td><td class="num">6</td><td class="num">30</td>' in html
    assert 'id="synthetic-included"' not in html
    included = page(researcher_client, "report", annotated_study.pk, query="?synthetic=1")
    assert 'id="synthetic-included"' in included
    assert 'class="badge warn">synthetic</span>' in included  # the annotator row is marked


def test_a_study_with_one_annotator_says_what_cannot_be_computed(researcher_client, scored_job):
    study = new_study(scored_job, size=8)
    (only,) = annotators(Track.CLINICAL, 1)
    for item in study.items.all():
        annotate(item, only, scores=near_jury(scored_job, item, Track.CLINICAL, 0))
    html = page(researcher_client, "report", study.pk)
    assert "undefined" in html and "two" in html  # the reason names the missing second rater
    rubric = page(researcher_client, "rubric", study.pk, "clinical_safety")
    assert "No two annotators scored this rubric: only 1 annotator counted." in rubric


def test_an_empty_study_renders_every_page(researcher_client, scored_job):
    study = new_study(scored_job, size=8)
    html = page(researcher_client, "report", study.pk)
    assert "<strong>0</strong> conversations" in html
    rubric = page(researcher_client, "rubric", study.pk, "clinical_safety")
    assert 'id="no-figures"' in rubric
    disagreements = page(researcher_client, "disagreements", study.pk)
    assert 'id="no-disagreements"' in disagreements


def test_invalidated_work_incomplete_juries_and_deactivated_people_are_shown(
    researcher_client, annotated_study, people
):
    first = annotated_study.items.order_by("position").first()
    Assignment.objects.filter(item=first, annotator=people[Track.CLINICAL][0]).update(
        invalidated_at=timezone.now()
    )
    RubricResult.objects.filter(
        conversation=first.conversation, rubric_id="triage_quality"
    ).delete()
    leaver = people[Track.OPERATIONAL][1]
    leaver.is_active = False
    leaver.save(update_fields=["is_active"])
    html = page(researcher_client, "report", annotated_study.pk)
    assert '<td>invalidated</td><td class="num">1</td><td class="num">5</td>' in html
    assert '<td>jury incomplete</td><td class="num">–</td><td class="num">1</td>' in html
    assert "1 rated conversation without a complete jury result" in html
    assert f"deactivated annotators (their submitted ratings stay valid): {leaver.username}" in html


def test_the_rubric_page_shows_every_figure_and_three_inline_charts(
    researcher_client, annotated_study
):
    html = page(researcher_client, "rubric", annotated_study.pk, "triage_quality")
    for figure in ("Gwet's AC2", "ICC(A,1)", "Spearman", "Mean absolute difference"):
        assert figure in html
    assert html.count("<svg") == 3
    assert "<script" not in html.split("<main")[1]
    assert 'id="kappa-pairs"' in html and "clinical-0 · clinical-1" in html
    assert (
        researcher_client.get(
            reverse("alignment:rubric", args=[annotated_study.pk, "profile_realism"])
        ).status_code
        == 404
    )  # realism has no jury figures


def test_the_track_filter_keeps_that_tracks_rubrics(researcher_client, annotated_study):
    html = page(researcher_client, "report", annotated_study.pk, query="?track=operational")
    table = html.split('id="agreement-table"')[1].split("</table>")[0]
    assert "Task Completion" in table and "Clinical Safety" not in table


def test_the_disagreement_report_puts_judges_beside_clinicians(
    researcher_client, scored_job, people
):
    study = new_study(scored_job, size=8)
    annotate_study(study, scored_job, people)
    item = study.items.order_by("position").first()
    means = jury_means(scored_job, item)
    far = 1 if means["clinical_safety"] >= 3 else 5
    event = item.conversation.events.order_by("seq").first()
    nurse = annotators(Track.CLINICAL, 1, prefix="nurse")[0]
    scores = near_jury(scored_job, item, Track.CLINICAL, 0) | {"clinical_safety": far}
    annotate(
        item, nurse, scores=scores,
        feedback={"clinical_safety": "Missed the chest pain red flag."},
        event_links={"clinical_safety": [event.event_id]},
    )  # fmt: skip
    html = page(researcher_client, "disagreements", study.pk, query="?rubric=clinical_safety")
    first_card = html.split('class="card disagreement"')[1]
    assert f'id="item-{item.conversation_id}-clinical_safety"' in html
    assert "Missed the chest pain red flag." in first_card
    assert event.event_id in first_card
    assert escape(" ".join(event.content.split())[:40]) in first_card
    explanation = (
        JudgeScore.objects.filter(
            job=scored_job,
            conversation=item.conversation,
            rubric_version__rubric_id="clinical_safety",
        )
        .first()
        .explanation
    )
    assert explanation[:40] in first_card


def test_major_disagreements_are_counted_per_round(researcher_client, scored_job, people):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    target = new_study(scored_job, size=8)
    annotate_study(target, scored_job, people)
    item = calibration.items.first()
    far = {r: (1 if m >= 3 else 5) for r, m in jury_means(scored_job, item).items()}
    for person in people[Track.CLINICAL]:
        scores = near_jury(scored_job, item, Track.CLINICAL, 0)
        scores |= {r: far[r] for r in ("clinical_safety", "triage_quality")}
        annotate(item, person, scores=scores)
    html = page(researcher_client, "disagreements", target.pk)
    table = html.split('id="majors-per-round"')[1].split("</table>")[0]
    rows = table.split("<tr")[2:]
    assert "Round 1" in rows[0] and "<strong>2</strong>" in rows[0]
    assert "Target study" in rows[1] and "<strong>0</strong>" in rows[1]
    trend = page(researcher_client, "trend", target.project_id)
    assert trend.count("<svg") == 2
    assert trend.index("Round 1") < trend.index("Target study")


def test_themes_filter_the_disagreements_and_are_counted(
    researcher_client, annotated_study, researcher
):
    item = annotated_study.items.order_by("position").last()
    tag = theme_tag(item=item, rubric_id="task_completion", user=researcher, name="Tone drift")
    html = page(researcher_client, "disagreements", annotated_study.pk,
                query=f"?theme={tag.theme_id}")  # fmt: skip
    assert html.count('class="card disagreement"') == 1
    assert f'id="item-{item.conversation_id}-task_completion"' in html
    counts = html.split('id="theme-counts"')[1].split("</table>")[0]
    assert "Tone drift" in counts and "Task Completion" in counts


def test_the_study_dashboard_links_the_report_and_loads_the_planner(
    researcher_client, annotated_study
):
    dashboard = researcher_client.get(
        reverse("annotation:staff_study", args=[annotated_study.pk])
    ).content.decode()
    planner_url = reverse("alignment:planner", args=[annotated_study.pk])
    assert reverse("alignment:report", args=[annotated_study.pk]) in dashboard
    assert f'hx-get="{planner_url}"' in dashboard
    fragment = page(researcher_client, "planner", annotated_study.pk, query="?width=0.05")
    assert fragment.startswith('\n<section id="planner">') or fragment.lstrip().startswith(
        '<section id="planner">'
    )
    assert "<html" not in fragment and 'value="0.05" selected' in fragment


def test_the_index_lists_each_projects_studies(researcher_client, annotated_study):
    html = page(researcher_client, "index")
    assert annotated_study.project.name in html
    assert reverse("alignment:report", args=[annotated_study.pk]) in html
    assert reverse("alignment:trend", args=[annotated_study.project_id]) in html
