"""The product is CareJury on every page and in what it writes; the former name (HealthBench
Lab, which collided with OpenAI's HealthBench) is gone from them."""

from django.urls import reverse

from alignment.services.archive import readme


def test_every_page_names_the_product_carejury(researcher_client):
    page = researcher_client.get(reverse("home")).content.decode()
    assert "<title>" in page and "CareJury</title>" in page
    assert "HealthBench" not in page


def test_the_login_page_names_it_too(client):
    page = client.get(reverse("login")).content.decode()
    assert "CareJury" in page and "HealthBench" not in page


def test_the_study_archive_names_the_product_and_its_format():
    text = readme.text(with_usernames=False)
    assert "CareJury study archive (format carejury-study-archive" in text
    assert "HealthBench" not in text
