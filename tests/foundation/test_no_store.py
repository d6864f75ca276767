"""Nothing a logged-in person opens is kept by the browser or a proxy: every page, htmx
fragment, export and download of the access table answers with Cache-Control: no-store;
static files stay cacheable."""

import pytest
from django.urls import reverse

from accounts.models import Role
from tests.foundation.access_table import PAGES, access_world


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    yield from access_world(django_db_blocker)


def cache_control(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part}


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_page_a_logged_in_person_opens_is_never_stored(client, world, page):
    users, objects = world
    client.force_login(users[page.roles[0]])
    url = reverse(page.name, kwargs=page.kwargs(objects))
    for response in (client.get(url), client.get(url, HTTP_HX_REQUEST="true")):
        assert "no-store" in cache_control(response), (url, response.status_code)
        assert "private" in cache_control(response)


@pytest.mark.django_db
def test_refusals_and_missing_pages_are_never_stored_either(client, world):
    users, _ = world
    client.force_login(users[Role.ANNOTATOR])
    assert "no-store" in cache_control(client.get(reverse("benchmark:runs")))  # 403
    assert "no-store" in cache_control(client.get("/no/such/page/"))


@pytest.mark.django_db
def test_static_files_keep_their_caching(client, world):
    users, _ = world
    client.force_login(users[Role.RESEARCHER])
    response = client.get("/static/css/app.css")
    assert response.status_code == 200
    assert "no-store" not in cache_control(response)
