"""The study archive's pages moved from /annotation/staff/ to /alignment/: the old names and
addresses still work, sending the browser on (a POST stays a POST)."""

import pytest
from django.urls import reverse

from alignment.models import ArchiveJob
from tests.alignment.archive_support import build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_study(scored_job, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return build_world(scored_job)[0]


def test_the_old_import_page_address_redirects_to_the_new_one(researcher_client):
    response = researcher_client.get(reverse("annotation:staff_archive_import") + "?x=1")
    assert response.status_code == 302
    assert response["Location"] == reverse("alignment:archive_import") + "?x=1"


def test_a_post_to_the_old_export_address_still_starts_an_export(researcher_client, world_study):
    old = reverse("annotation:staff_study_archive", args=[world_study.pk])
    assert old == f"/annotation/staff/studies/{world_study.pk}/archive/"
    response = researcher_client.post(old, {"with_usernames": "1"})
    assert response.status_code == 307
    assert response["Location"] == reverse("alignment:study_archive", args=[world_study.pk])
    followed = researcher_client.post(old, {"with_usernames": "1"}, follow=True)
    assert followed.status_code == 200
    assert ArchiveJob.objects.filter(with_usernames=True).count() == 1


def test_the_old_job_address_keeps_its_access_rule(client, annotator, researcher):
    old = reverse("annotation:staff_archive_job", args=[1])
    client.force_login(annotator)
    assert client.get(old).status_code == 403
    client.force_login(researcher)
    response = client.get(old)
    assert response["Location"] == reverse("alignment:archive_job", args=[1])
