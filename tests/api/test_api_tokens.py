"""Personal access tokens: made on their own page and shown once, stored as a digest, read or
read-write, expiring, revocable, rate limited per token; every use of a write scope audited;
annotators cannot have one."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import token_create, token_digest
from audit.models import AuditEvent
from tests.support.api import API, bearer
from tests.support.builders import enriched_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


def test_a_token_made_on_the_page_is_shown_once_and_stored_as_a_digest(researcher_client):
    response = researcher_client.post(
        reverse("api_tokens"),
        {"name": "Nightly", "scope": "read", "days": "30", "requests_per_minute": "60"},
    )
    page = response.content.decode()
    token = ApiToken.objects.get()
    raw = page.split('<code class="token">')[1].split("</code>")[0]
    assert raw.startswith(token.prefix) and token.digest == token_digest(raw)
    assert raw not in str(list(ApiToken.objects.values()))  # not stored
    assert raw not in researcher_client.get(reverse("api_tokens")).content.decode()
    assert AuditEvent.objects.filter(action="token.created", actor__username="rita").exists()
    assert (token.expires_at - timezone.now()).days in {29, 30}


def test_annotators_have_no_token_page_and_cannot_be_given_a_token(client, annotator):
    client.force_login(annotator)
    assert client.get(reverse("api_tokens")).status_code == 403
    with pytest.raises(ValidationError):
        token_create(user=annotator, name="x", scope="read", days=7)


def test_a_read_token_reads_as_its_owner_and_may_not_write(client, researcher):
    _, raw = token_create(user=researcher, name="Reader", scope="read", days=7)
    assert client.get(f"{API}/runs", **bearer(raw)).status_code == 200
    response = client.post(
        f"{API}/case-sets", {"name": "x"}, content_type="application/json", **bearer(raw)
    )
    assert response.status_code == 403
    assert "read-write" in response.json()["detail"]


def test_every_use_of_a_write_scope_is_audited_and_acts_as_the_owner(client, researcher):
    token, raw = token_create(user=researcher, name="Writer", scope="write", days=7)
    response = client.post(
        f"{API}/case-sets", {"name": "By token", "size": 1}, content_type="application/json",
        **bearer(raw),
    )  # fmt: skip
    assert response.status_code == 201, response.content
    used = AuditEvent.objects.get(action="token.write_used")
    assert used.actor == researcher and used.object_id == str(token.pk)
    assert used.after == {"method": "POST", "path": "/api/v1/case-sets", "status": 201}
    created = AuditEvent.objects.get(action="set.created")
    assert created.actor == researcher


def test_a_researchers_write_token_cannot_launch_runs_as_only_admins_can(client, researcher):
    _, raw = token_create(user=researcher, name="Writer", scope="write", days=7)
    payload = {"name": "R", "benchmark_set": enriched_set(size=1).pk, "models": ["offline/careful"]}
    response = client.post(f"{API}/runs", payload, content_type="application/json", **bearer(raw))
    assert response.status_code == 403


def test_an_expired_token_is_refused_with_the_date(client, researcher):
    token, raw = token_create(user=researcher, name="Old", scope="read", days=7)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(days=1))
    response = client.get(f"{API}/runs", **bearer(raw))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_a_revoked_token_is_refused(researcher_client, client, researcher):
    token, raw = token_create(user=researcher, name="Lost", scope="read", days=7)
    researcher_client.post(reverse("api_token_revoke", args=[token.pk]))
    response = client.get(f"{API}/runs", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert AuditEvent.objects.filter(action="token.revoked").exists()


def test_an_unknown_token_is_refused_without_falling_back_to_the_session(
    researcher_client,
):
    response = researcher_client.get(f"{API}/runs", **bearer("cj_made-up"))
    assert response.status_code == 401


def test_a_token_of_someone_made_an_annotator_is_refused(client, researcher):
    _, raw = token_create(user=researcher, name="Before", scope="read", days=7)
    researcher.role, researcher.track = "annotator", "clinical"
    researcher.save()
    assert client.get(f"{API}/runs", **bearer(raw)).status_code == 401


def test_each_token_is_rate_limited_on_its_own(client, researcher):
    _, first = token_create(user=researcher, name="A", scope="read", days=7, requests_per_minute=3)
    _, second = token_create(user=researcher, name="B", scope="read", days=7, requests_per_minute=3)
    codes = [client.get(f"{API}/runs", **bearer(first)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = client.get(f"{API}/runs", **bearer(first))
    assert int(limited["Retry-After"]) >= 1
    assert client.get(f"{API}/runs", **bearer(second)).status_code == 200


def test_a_revoke_only_finds_the_callers_own_tokens(admin_client_, researcher):
    token, _ = token_create(user=researcher, name="Hers", scope="read", days=7)
    assert admin_client_.post(reverse("api_token_revoke", args=[token.pk])).status_code == 404
