"""Who reaches the API: staff only. Annotators are refused on every route (the API shows
model identities and jury scores); anonymous callers get 401, not a login page."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_anonymous_callers_get_401_as_json(client):
    response = client.get("/api/v1/runs")
    assert response.status_code == 401
    assert response.json()["detail"]


def test_an_annotator_session_is_refused_with_403(client, annotator):
    client.force_login(annotator)
    response = client.get("/api/v1/runs")
    assert response.status_code == 403
    assert "annotators" in response.json()["detail"]


def test_the_schema_lists_every_resource(researcher_client):
    schema = researcher_client.get(reverse("api:openapi-json")).json()
    paths = set(schema["paths"])
    for path in ("/api/v1/case-sets", "/api/v1/runs", "/api/v1/runs/{run_id}/conversations",
                 "/api/v1/scoring-jobs/{job_id}/models", "/api/v1/studies/{study_id}/agreement",
                 "/api/v1/archives/exports"):  # fmt: skip
        assert path in paths


def test_the_docs_page_loads_only_vendored_scripts_and_no_inline_script(researcher_client):
    response = researcher_client.get(reverse("api:openapi-view"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "/static/ninja/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
    scripts = page.split("<script")[1:]
    assert all('src="/static/' in s.split(">")[0] or "application/json" in s.split(">")[0]
               for s in scripts)  # fmt: skip


def test_the_docs_page_sends_anonymous_visitors_to_login_and_refuses_annotators(client, annotator):
    response = client.get(reverse("api:openapi-view"))
    assert response.status_code == 302
    client.force_login(annotator)
    assert client.get(reverse("api:openapi-view")).status_code == 403
