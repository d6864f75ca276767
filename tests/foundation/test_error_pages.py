"""403, 404 and 500 pages look like the site, with its navigation and a way back."""

import copy

import pytest
from django.test import Client
from django.urls import path

from config.urls import urlpatterns as site_urlpatterns
from tests.support.regions import region

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


def broken_view(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("broken/", broken_view), *site_urlpatterns]


def assert_site_page(page: str) -> None:
    assert "/static/css/app.css" in page and 'class="brand"' in page
    assert region(page, "way-back").text  # a link home at least


def test_a_missing_page_has_the_site_navigation_and_a_way_back(client, researcher, settings):
    settings.DEBUG = False
    client.force_login(researcher)
    response = client.get("/benchmark/runs/987654/", HTTP_REFERER="/benchmark/runs/")
    page = response.content.decode()
    assert response.status_code == 404
    assert_site_page(page)
    assert "Page not found" in page and "/benchmark/runs/987654/" in page
    nav = region(page, "site-nav").text
    assert "Runs" in nav and "Reports" in nav
    assert 'href="/benchmark/runs/"' in page  # back where the user came from


def test_a_forbidden_page_says_why_and_keeps_the_roles_navigation(client, annotator, settings):
    settings.DEBUG = False
    client.force_login(annotator)
    response = client.get("/benchmark/runs/")
    page = response.content.decode()
    assert response.status_code == 403
    assert_site_page(page)
    assert "Your role cannot open this page." in page
    nav = region(page, "site-nav").text
    assert "Rubrics" in nav and "Runs" not in nav


def test_an_anonymous_visitor_on_a_missing_page_is_offered_the_login(client, settings):
    settings.DEBUG = False
    page = client.get("/no/such/page/").content.decode()
    assert_site_page(page)
    assert "Log in" in region(page, "way-back").text


def broken_context(request):
    raise RuntimeError("the navigation needs the database, which is down")


def test_a_server_error_page_renders_even_when_the_request_context_fails(researcher, settings):
    settings.DEBUG = False
    templates = copy.deepcopy(settings.TEMPLATES)
    templates[0]["OPTIONS"]["context_processors"].append(f"{__name__}.broken_context")
    settings.TEMPLATES = templates
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    response = client.get("/broken/")
    page = response.content.decode()
    assert response.status_code == 500
    assert_site_page(page)
    assert "Something went wrong" in page and "a bug in a view" not in page
