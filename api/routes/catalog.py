"""What runs are made of and priced by: distributions, agent configurations, model prices and
named model endpoints - the read-outs and saves of their pages, as JSON."""

from __future__ import annotations

import os

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Status

from api.auth import admins
from api.forms import form_checked
from api.problems import Refused, responses
from api.schemas import (
    AgentConfigOut,
    DistributionOut,
    EndpointListIn,
    EndpointListOut,
    PriceIn,
    PriceOut,
)
from benchmark import forms
from benchmark.models import AgentConfig, Distribution
from benchmark.services import agents as agent_services
from llm.services import endpoints as endpoint_services
from llm.services import prices

router = Router(tags=["catalog"])


def distribution_out(distribution: Distribution) -> dict:
    return {
        "id": distribution.pk,
        "name": distribution.name,
        "fingerprint": distribution.fingerprint,
        "created_at": distribution.created_at,
        "text": distribution.yaml_text,
    }


def agent_config_out(config: AgentConfig) -> dict:
    return {
        "id": config.pk,
        "slug": config.slug,
        "name": config.name,
        "fingerprint": config.fingerprint,
        "created_at": config.created_at,
        "text": config.yaml_text,
    }


@router.get(
    "/distributions", response=responses({200: list[DistributionOut]}), url_name="distributions"
)
def distribution_list(request: HttpRequest):
    """Every distribution a case set can be sampled from (`POST /case-sets` takes its id)."""
    return [distribution_out(each) for each in Distribution.objects.order_by("pk")]


@router.get(
    "/distributions/{distribution_id}",
    response=responses({200: DistributionOut}, 404),
    url_name="distribution",
)
def distribution_detail(request: HttpRequest, distribution_id: int):
    return distribution_out(get_object_or_404(Distribution, pk=distribution_id))


@router.get(
    "/agent-configs", response=responses({200: list[AgentConfigOut]}), url_name="agent_configs"
)
def agent_config_list(request: HttpRequest):
    """The newest version of each agent configuration (a run's `agent_configs` takes ids)."""
    agent_services.agent_configs_ensure_shipped()
    return [agent_config_out(each) for each in agent_services.latest_agent_configs()]


@router.get("/prices", response=responses({200: list[PriceOut]}), url_name="prices")
def price_list(request: HttpRequest):
    """Every price in force: the staff prices, then prices.yaml's entries they do not replace."""
    staff = prices.current_prices()
    rows = [_price_row(row.model, row, "staff", row.created_at) for row in staff]
    replaced = {row.model for row in staff}
    for entry in prices.file_prices():
        if entry.key not in replaced and entry.price is not None:
            rows.append(_price_row(entry.key, entry.price, "prices.yaml", None))
    return rows


@router.post("/prices", response=responses({201: PriceOut}, 400), url_name="price_set")
def price_set(request: HttpRequest, payload: PriceIn):
    """Set a model's price from its next call on (the Prices page's form and checks)."""
    form = form_checked(forms.PriceForm, payload.dict())
    try:
        row = prices.price_set(user=request.user, **form.cleaned_data)
    except prices.PriceError as error:
        raise Refused(str(error)) from None
    return Status(201, _price_row(row.model, row, "staff", row.created_at))


@router.get(
    "/endpoints", response=responses({200: EndpointListOut}), url_name="endpoints", auth=admins()
)
def endpoint_list(request: HttpRequest):
    """The named model endpoints in force and whether each key variable is set (admins)."""
    return _endpoints()


@router.put(
    "/endpoints",
    response=responses({200: EndpointListOut}, 400),
    url_name="endpoints_save",
    auth=admins(),
)
def endpoint_list_save(request: HttpRequest, payload: EndpointListIn):
    """Replace the endpoint list (its YAML, checked as on the Endpoints page; admins)."""
    form = form_checked(forms.EndpointListForm, payload.dict())
    endpoint_services.endpoint_list_save(user=request.user, **form.cleaned_data)
    return _endpoints()


def _endpoints() -> dict:
    rows = endpoint_services.endpoint_rows(os.environ)
    return {
        "yaml_text": endpoint_services.endpoints_text(),
        "endpoints": [
            {
                "name": row["endpoint"].name,
                "base_url": row["endpoint"].base_url,
                "api_key_env": row["endpoint"].api_key_env,
                "key_state": row["key_state"],
                "requests_per_minute": row["endpoint"].requests_per_minute,
                "tokens_per_minute": row["endpoint"].tokens_per_minute,
                "concurrency": row["endpoint"].concurrency,
            }
            for row in rows
        ],
    }


def _price_row(model: str, price, source: str, set_at) -> dict:
    figures = {name: getattr(price, name) for name in prices.PRICE_FIELDS}
    return {"model": model, "source": source, "set_at": set_at, **figures}
