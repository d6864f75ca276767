"""Theme and text size are kept with the account: every page carries them on <html>, the
display menu posts a change (answered 204 to the page's script, a redirect back without it),
and a value the site does not offer changes nothing."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

URL = reverse("display_preferences")


def test_a_choice_is_kept_and_every_page_carries_it(client, annotator):
    client.force_login(annotator)
    page = client.get("/").content.decode()
    assert '<html lang="en" data-theme="system" data-text-size="medium">' in page
    response = client.post(
        URL, {"theme": "dark", "text_size": "large"}, HTTP_X_REQUESTED_WITH="fetch"
    )
    assert response.status_code == 204
    annotator.refresh_from_db()
    assert (annotator.theme, annotator.text_size) == ("dark", "large")
    page = client.get(reverse("jury:rubrics")).content.decode()
    assert '<html lang="en" data-theme="dark" data-text-size="large">' in page
    assert 'name="theme" value="dark" checked' in page


def test_a_setting_left_out_keeps_its_value(client, researcher):
    client.force_login(researcher)
    client.post(URL, {"theme": "light", "text_size": "largest"}, HTTP_X_REQUESTED_WITH="fetch")
    client.post(URL, {"theme": "dark"}, HTTP_X_REQUESTED_WITH="fetch")
    researcher.refresh_from_db()
    assert (researcher.theme, researcher.text_size) == ("dark", "largest")


def test_without_the_script_the_form_comes_back_to_the_page_it_was_sent_from(client, annotator):
    client.force_login(annotator)
    response = client.post(URL, {"theme": "dark", "next": "/jury/rubrics/"})
    assert response.status_code == 302 and response["Location"] == "/jury/rubrics/"
    elsewhere = client.post(URL, {"theme": "light", "next": "https://example.org/"})
    assert elsewhere["Location"] == reverse("home")  # never to another site


def test_a_value_the_site_does_not_offer_changes_nothing(client, annotator):
    client.force_login(annotator)
    response = client.post(URL, {"theme": "sepia", "text_size": "large"})
    assert response.status_code == 400
    annotator.refresh_from_db()
    assert (annotator.theme, annotator.text_size) == ("system", "medium")


def test_the_login_page_follows_the_system_setting(client):
    page = client.get(reverse("login")).content.decode()
    assert '<html lang="en" data-theme="system" data-text-size="medium">' in page
    assert "display-menu" not in page
