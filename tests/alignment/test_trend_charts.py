"""The calibration trend page draws its charts once for a state of its rounds: an unchanged
trend is served from the cache, a new annotation draws them again."""

import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from accounts.models import Track
from alignment.services import figures
from audit.models import AuditEvent
from tests.alignment.conftest import annotate_study, near_jury
from tests.annotation.conftest import new_study
from tests.annotation.staff_support import annotate

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawn(monkeypatch):
    """The charts drawn, by title."""
    cache.clear()  # no chart of an earlier test
    titles = []
    draw = figures.trend_figure

    def counted(*args, **kwargs):
        titles.append(kwargs["title"])
        return draw(*args, **kwargs)

    monkeypatch.setattr(figures, "trend_figure", counted)
    yield titles
    cache.clear()


def trend_charts(client, project_id: int) -> list[str]:
    response = client.get(reverse("alignment:trend", args=[project_id]))
    assert response.status_code == 200
    return re.findall(r"<svg.*?</svg>", response.content.decode(), re.DOTALL)


def test_an_unchanged_trend_is_drawn_once_and_a_new_annotation_draws_it_again(
    researcher_client, scored_job, people, drawn
):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    target = new_study(scored_job, size=6)
    annotate_study(target, scored_job, people)
    first = trend_charts(researcher_client, target.project_id)
    assert len(drawn) == 2 and len(first) == 2

    assert trend_charts(researcher_client, target.project_id) == first
    assert len(drawn) == 2

    item = calibration.items.first()
    person = people[Track.CLINICAL][0]
    annotate(item, person, scores=near_jury(scored_job, item, Track.CLINICAL, 0))
    assert trend_charts(researcher_client, target.project_id) != first
    assert len(drawn) == 4


def test_a_trend_with_nothing_to_plot_offers_no_figure_and_says_why(
    researcher_client, scored_job, people
):
    study = new_study(scored_job, size=4)  # sampled, not annotated yet
    page = researcher_client.get(reverse("alignment:trend", args=[study.project_id]))
    html = page.content.decode()
    figure = reverse("alignment:trend_figure", args=[study.project_id, "rubrics", "svg"])
    assert "<svg" not in html and figure.removesuffix("rubrics.svg") not in html
    assert "no round has a conversation with both a jury score" in html
    assert "no counted rating has a jury score" in html
    for kind in ("rubrics", "annotators"):
        url = reverse("alignment:trend_figure", args=[study.project_id, kind, "png"])
        assert researcher_client.get(url).status_code == 404


def test_each_chart_of_a_trend_is_offered_once_it_has_data(researcher_client, scored_job, people):
    study = new_study(scored_job, size=6)
    annotate_study(study, scored_job, people)
    html = researcher_client.get(reverse("alignment:trend", args=[study.project_id])).content
    assert html.decode().count("<svg") == 2 and b"trend-gap" not in html
    url = reverse("alignment:trend_figure", args=[study.project_id, "rubrics", "png"])
    assert researcher_client.get(url).status_code == 200
    recorded = AuditEvent.objects.filter(action="download.figure").latest("pk")
    assert recorded.after["file"] == f"project-{study.project_id}-trend-rubrics.png"
