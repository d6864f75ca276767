"""Every figure of a study is reproducible from its archive, byte for byte: the scatter's
jitter and drawing order, the SVG ids and the files' metadata come from nothing an import
renumbers (study, conversation and project ids) and from no clock."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from accounts.models import Role
from alignment.services import figures
from alignment.services.reports import study_report
from alignment.views.reports import FIGURE_KINDS, TREND_KINDS
from tests.alignment.archive_support import archive_bytes, build_world, import_bytes, wipe_site
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def rubric_figures(client, study, formats=figures.FORMATS) -> dict[tuple, bytes]:
    """Every figure of the study's rubric pages, in each of `formats`."""
    return {
        (section.rubric.rubric_id, kind, fmt): download(
            client,
            reverse("alignment:figure", args=[study.pk, section.rubric.rubric_id, kind, fmt]),
        )
        for section in study_report(study).sections
        for kind in FIGURE_KINDS
        for fmt in formats
    }


def trend_figures(client, study, kinds=TREND_KINDS, formats=figures.FORMATS) -> dict:
    return {
        ("trend", kind, fmt): download(
            client, reverse("alignment:trend_figure", args=[study.project_id, kind, fmt])
        )
        for kind in kinds
        for fmt in formats
    }


def every_figure(client, study) -> dict[tuple, bytes]:
    return rubric_figures(client, study) | trend_figures(client, study)


def download(client, url: str) -> bytes:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content


def differing(before: dict, after: dict) -> list:
    assert before.keys() == after.keys()
    return [key for key in before if before[key] != after[key]]


# Drawing is the same on either database; the import is the production one.
@pytest.mark.leg("postgres")
def test_every_figure_re_rendered_from_the_archive_on_an_empty_site_is_the_same(client, scored_job):
    original = build_world(scored_job)[0]
    researcher = make_user("figure-reader", Role.RESEARCHER)
    client.force_login(researcher)
    before = every_figure(client, original)
    archive = archive_bytes(original, with_usernames=True)  # the annotator chart names people
    wipe_site()
    cache.clear()
    imported = import_bytes(archive).study
    client.force_login(make_user("figure-reader", Role.RESEARCHER))
    assert len(before) == (len(study_report(imported).sections) * 3 + 2) * 3 > 9
    assert differing(before, every_figure(client, imported)) == []


def test_an_import_beside_the_original_draws_its_figures_the_same(researcher_client, scored_job):
    original = build_world(scored_job)[0]
    imported = import_bytes(archive_bytes(original)).study
    assert (imported.pk, imported.project_id) != (original.pk, original.project_id)

    def figures_of(study):
        # The annotator chart names people: usernames an import beside them renames. SVG only:
        # it carries the ids and the drawing order an import renumbers; every format's
        # metadata is held by the test above.
        return rubric_figures(researcher_client, study, formats=["svg"]) | trend_figures(
            researcher_client, study, kinds=["rubrics"], formats=["svg"]
        )

    assert differing(figures_of(original), figures_of(imported)) == []
