"""Tagging disagreements with themes: created inline, reused by name, counted per rubric."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from alignment.models import ItemTheme, Theme
from alignment.services.themes import theme_counts, theme_tag, theme_untag
from annotation.models import Project

pytestmark = pytest.mark.django_db


def test_a_new_name_creates_a_theme_in_the_project_and_reuses_it(annotated_study, researcher):
    first, second = annotated_study.items.all()[:2]
    tag = theme_tag(
        item=first, rubric_id="clinical_safety", user=researcher, name="Rubric ambiguity"
    )
    again = theme_tag(item=second, rubric_id="clinical_safety", user=researcher,
                      name="  rubric   AMBIGUITY ")  # fmt: skip
    assert again.theme == tag.theme
    assert tag.theme.project == annotated_study.project
    assert Theme.objects.count() == 1


def test_counts_per_theme_and_rubric(annotated_study, researcher):
    items = list(annotated_study.items.all()[:3])
    for item in items:
        theme_tag(item=item, rubric_id="clinical_safety", user=researcher, name="Over-triage")
    theme_tag(item=items[0], rubric_id="task_completion", user=researcher, name="Over-triage")
    theme_tag(item=items[1], rubric_id="task_completion", user=researcher, name="Education")
    rubrics, rows = theme_counts(annotated_study)
    assert rubrics == ["clinical_safety", "task_completion"]
    assert rows == [
        {"theme": "Over-triage", "counts": [3, 1], "total": 4},
        {"theme": "Education", "counts": [0, 1], "total": 1},
    ]


def test_tagging_twice_keeps_one_tag_and_untagging_removes_it(annotated_study, researcher):
    item = annotated_study.items.first()
    tag = theme_tag(item=item, rubric_id="triage_quality", user=researcher, name="Safety net")
    assert theme_tag(item=item, rubric_id="triage_quality", user=researcher, theme=tag.theme) == tag
    theme_untag(tag)
    assert not ItemTheme.objects.exists()
    assert Theme.objects.filter(name="Safety net").exists()  # the theme stays for reuse


def test_bad_tags_are_refused_with_a_reason(annotated_study, researcher):
    item = annotated_study.items.first()
    with pytest.raises(ValidationError, match="no rubric"):
        theme_tag(item=item, rubric_id="bedside_manner", user=researcher, name="x")
    with pytest.raises(ValidationError, match="Pick a theme"):
        theme_tag(item=item, rubric_id="clinical_safety", user=researcher, name="   ")
    elsewhere = Theme.objects.create(name="Other", project=Project.objects.create(name="Other"))
    with pytest.raises(ValidationError, match="another project"):
        theme_tag(item=item, rubric_id="clinical_safety", user=researcher, theme=elsewhere)


def test_the_htmx_tag_answers_with_the_theme_cell_only(researcher_client, annotated_study):
    item = annotated_study.items.first()
    url = reverse("alignment:tag", args=[annotated_study.pk, item.pk])
    response = researcher_client.post(
        url, {"rubric": "clinical_safety", "name": "Post-action education"}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.strip().startswith(f'<div class="themes" id="themes-{item.pk}-clinical_safety"')
    assert "Post-action education" in body and "<html" not in body
    tag = ItemTheme.objects.get()
    response = researcher_client.post(
        reverse("alignment:untag", args=[tag.pk]), HTTP_HX_REQUEST="true"
    )
    assert "Post-action education</span>" not in response.content.decode().split("<select")[0]
    assert not ItemTheme.objects.exists()


def test_a_refused_tag_shows_the_reason_in_the_cell(researcher_client, annotated_study):
    item = annotated_study.items.first()
    url = reverse("alignment:tag", args=[annotated_study.pk, item.pk])
    response = researcher_client.post(url, {"rubric": "clinical_safety"}, HTTP_HX_REQUEST="true")
    assert "Pick a theme or type the name" in response.content.decode()
    assert not ItemTheme.objects.exists()


def test_a_plain_post_redirects_back_to_the_item(researcher_client, annotated_study):
    item = annotated_study.items.first()
    url = reverse("alignment:tag", args=[annotated_study.pk, item.pk])
    response = researcher_client.post(url, {"rubric": "clinical_safety", "name": "Tone"})
    assert response.status_code == 302
    assert response["Location"].endswith(f"#item-{item.conversation_id}-clinical_safety")
