"""Out-of-range numbers and ids from forms and query strings get a clear answer, never a 500."""

from decimal import Decimal

import pytest
from django.urls import reverse

from jobs.models import JobStatus

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("limit", ["1e30", "NaN", "Infinity", "-3", "0.001", "lots"])
def test_a_bad_cost_limit_on_resume_is_refused_with_a_message(admin_client_, run, limit):
    run.status = JobStatus.PAUSED
    run.save()
    url = reverse("benchmark:run_control", kwargs={"pk": run.pk, "action": "resume"})
    response = admin_client_.post(url, {"cost_limit": limit}, follow=True)
    assert response.status_code == 200
    assert (
        "cost limit" in response.content.decode().lower() or "dollars" in response.content.decode()
    )
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED and run.cost_limit_usd is None
    assert admin_client_.get(reverse("benchmark:runs")).status_code == 200


def test_a_good_cost_limit_is_stored_to_the_cent(admin_client_, run):
    run.status = JobStatus.PAUSED
    run.save()
    url = reverse("benchmark:run_control", kwargs={"pk": run.pk, "action": "resume"})
    admin_client_.post(url, {"cost_limit": "12.345"})
    run.refresh_from_db()
    assert run.cost_limit_usd == Decimal("12.35") or run.cost_limit_usd == Decimal("12.34")


def test_a_huge_agent_id_in_the_query_string_is_refused_not_a_server_error(researcher_client, run):
    url = reverse("benchmark:run", kwargs={"pk": run.pk})
    assert researcher_client.get(url, {"agent": "9" * 30}).status_code == 400


def test_a_seed_beyond_64_bits_is_a_form_error(researcher_client, distribution):
    response = researcher_client.post(reverse("benchmark:set_new"), {
        "name": "too big", "distribution": distribution.pk, "size": 2,
        "sampler_seed": 2**64, "generator_model": "offline/standard",
    })  # fmt: skip
    assert response.status_code == 200
    assert "less than or equal to" in response.content.decode()
