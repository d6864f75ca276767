"""Distributions, agent configurations, prices and named endpoints through the API, with the
checks of their pages (endpoints are admins' only)."""

import pytest

from llm.models import ModelEndpointList
from tests.support.api import API

pytestmark = pytest.mark.django_db


def test_distributions_and_agent_configurations_are_listed(researcher_client):
    researcher_client.post(f"{API}/case-sets", {"name": "S", "size": 1},
                           content_type="application/json")  # fmt: skip
    distributions = researcher_client.get(f"{API}/distributions").json()
    assert distributions and distributions[0]["text"]
    configs = researcher_client.get(f"{API}/agent-configs").json()
    assert "baseline" in {config["slug"] for config in configs}


def test_a_price_set_through_the_api_is_in_force_and_refused_figures_are_a_400(
    researcher_client,
):
    payload = {"model": "openai-compatible/m", "input_per_million": "1.5",
               "output_per_million": "6"}  # fmt: skip
    set_price = researcher_client.post(f"{API}/prices", payload, content_type="application/json")
    assert set_price.status_code == 201, set_price.content
    listed = {row["model"]: row for row in researcher_client.get(f"{API}/prices").json()}
    price = listed["openai-compatible/m"]
    assert price["source"] == "staff" and price["input_per_million"] == 1.5
    assert any(row["source"] == "prices.yaml" for row in listed.values())
    payload["output_per_million"] = "-1"
    refused = researcher_client.post(f"{API}/prices", payload, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["location"] == "body.output_per_million"


def test_only_admins_read_and_replace_the_endpoint_list(client, researcher, admin_client_):
    # (Both client fixtures log the one test client in: the researcher asks on a fresh one.)
    researcher_client = type(client)()
    researcher_client.force_login(researcher)
    assert researcher_client.get(f"{API}/endpoints").status_code == 403
    text = "endpoints:\n  - name: vllm-a\n    base_url: http://127.0.0.1:9/v1\n"
    saved = admin_client_.put(f"{API}/endpoints", {"yaml_text": text},
                              content_type="application/json")  # fmt: skip
    assert saved.status_code == 200, saved.content
    assert [row["name"] for row in saved.json()["endpoints"]] == ["vllm-a"]
    assert ModelEndpointList.objects.exists()
    broken = admin_client_.put(f"{API}/endpoints", {"yaml_text": "- name: [\n"},
                               content_type="application/json")  # fmt: skip
    assert broken.status_code == 400 and broken.json()["errors"]
