"""Every page requires login, and each role reaches only its pages (table-driven over all URLs)."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from accounts.models import Role
from tests.foundation.access_table import PAGES, PUBLIC, access_world

ALL_ROLES = (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN)


def named_patterns(resolver=None, namespace="") -> set[str]:
    names = set()
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names |= named_patterns(pattern, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(namespace + pattern.name)
    return names


def test_the_access_table_covers_every_named_url():
    covered = {page.name for page in PAGES} | PUBLIC
    assert named_patterns() - covered == set()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    yield from access_world(django_db_blocker)


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_anonymous_visitors_are_sent_to_login(client, world, page):
    _, objects = world
    response = getattr(client, page.method)(reverse(page.name, kwargs=page.kwargs(objects)))
    if page.api:  # a script gets an answer it can read, not a login form
        assert response.status_code == 401
        return
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
@pytest.mark.parametrize("role", ALL_ROLES)
def test_each_role_reaches_only_its_pages(client, world, page, role):
    users, objects = world
    client.force_login(users[role])
    response = getattr(client, page.method)(reverse(page.name, kwargs=page.kwargs(objects)))
    if role in page.roles:
        # An API write reached with an empty body is past the access check: 400 names the
        # missing fields.
        writes = ("post", "put")
        allowed = {200, 302, 405} | ({400} if page.api and page.method in writes else set())
        allowed |= {404} if page.nothing_to_draw or page.needs_set_up else set()
        assert response.status_code in allowed, response.content[:500]
    else:
        assert response.status_code == 403
