"""The batch APIs behind one interface: OpenAI's Batch API (chat completions and Responses)
and Anthropic's Message Batches through the real SDKs against the fake server's batch
endpoints, the offline scripts' batches, the batch price, and the fake's own checks."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from llm.engine.chat import ChatRequest, Message, ProviderError, Usage
from llm.engine.providers import InMemoryStore
from llm.engine.providers.batches import (
    ENDED,
    ERRORED,
    EXPIRED,
    IN_PROGRESS,
    Adoption,
    OfflineBatchProvider,
    custom_ids_check,
)
from llm.engine.providers.catalog import CatalogError, Price, parse_catalog
from tests.fakes.llm_server import bad_request

MODELS = ["openai/gpt-4o-mini", "openai/gpt-5.5@api=responses", "anthropic/claude-haiku-4-5"]


def three(user_request, model):
    return [(f"r{n}", user_request(model, f"question {n}")) for n in range(3)]


# --- the engine, no server ------------------------------------------------------------------


def test_a_batch_costs_the_price_less_its_discount_on_top_of_the_cache_discount():
    price = Price(Decimal(2), Decimal(8), Decimal("0.5"), None, Decimal("0.5"))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=500_000)

    assert price.cost(usage) == Decimal("9.25")
    assert price.batch_cost(usage) == Decimal("4.625")
    assert Price(Decimal(2), Decimal(8)).batch_cost(usage) == Decimal(10)  # no discount given


def test_the_catalog_reads_a_batch_discount_and_refuses_one_above_one():
    entry = {"input_per_million": 1, "output_per_million": 2, "batch_discount": 0.5}
    catalog = parse_catalog({"models": {"openai/x": entry}})
    assert catalog.price_for("openai/x").batch_discount == Decimal("0.5")

    with pytest.raises(CatalogError, match="batch_discount"):
        parse_catalog({"models": {"openai/x": {**entry, "batch_discount": 2}}})


def test_a_price_staff_set_keeps_the_files_batch_discount():
    catalog = parse_catalog(
        {"models": {"openai/x": {"input_per_million": 1, "output_per_million": 2,
                                 "batch_discount": 0.5}}}
    )  # fmt: skip
    overridden = catalog.with_prices({"openai/x": Price(Decimal(3), Decimal(4))})
    assert overridden.price_for("openai/x").batch_discount == Decimal("0.5")


def test_custom_ids_are_checked_as_the_strictest_provider_checks_them(user_request):
    request = user_request("offline/careful")
    with pytest.raises(ProviderError, match="custom ids"):
        custom_ids_check([("has space", request)])
    with pytest.raises(ProviderError, match="once"):
        custom_ids_check([("a", request), ("a", request)])
    with pytest.raises(ProviderError, match="at least one"):
        custom_ids_check([])


def test_an_offline_batch_ends_after_its_polls_and_answers_with_the_scripts():
    provider = OfflineBatchProvider("standard", polls_before_end=1)
    request = ChatRequest(
        model="offline/standard",
        purpose="no-such-purpose",
        system="",
        messages=(Message("user", "hi"),),
    )
    batch_id = provider.submit([("a", request)])

    assert provider.status(batch_id).state == IN_PROGRESS
    assert provider.status(batch_id).state == ENDED
    [result] = provider.results(batch_id, {"a": request})
    assert result.error_kind == ERRORED and "no script" in result.error
    with pytest.raises(ProviderError, match="no offline batch"):
        provider.status("batch_abc")


# --- the SDK adapters against the fake ------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_a_batch_goes_through_the_sdk_and_comes_back_priced_and_cached(
    make_client, user_request, llm_server, model
):
    llm_server.batches.polls_in_progress = 1
    store = InMemoryStore()
    client = make_client(model, use_cache=True, cache_store=store)
    requests = three(user_request, model)

    batch_id = client.batch_submit(requests)
    assert client.batch_status(batch_id).state == IN_PROGRESS
    status = client.batch_status(batch_id)
    results = list(client.batch_results(batch_id, dict(requests)))

    assert status.state == ENDED and status.counts == {"succeeded": 3}
    assert [r.custom_id for r in results] == ["r0", "r1", "r2"]
    assert {r.response.text for r in results} == {"Okay."}
    assert all(r.response.cost_usd == client.price.batch_cost(r.response.usage) for r in results)
    assert all(r.response.cost_usd < r.response.list_cost_usd for r in results)
    assert client.cached_answer(requests[0][1]).text == "Okay."  # a re-score hits the cache


@pytest.mark.parametrize("model", MODELS)
def test_errored_and_expired_requests_come_back_with_their_kind(
    make_client, user_request, llm_server, model
):
    llm_server.batches.errored_custom_ids = {"r0"}
    llm_server.batches.expire_next, llm_server.batches.expired_answered = 1, 2
    client = make_client(model)
    requests = three(user_request, model)

    batch_id = client.batch_submit(requests)
    status = client.batch_status(batch_id)
    results = {r.custom_id: r for r in client.batch_results(batch_id, dict(requests))}

    assert status.ended and status.counts == {"succeeded": 1, "errored": 1, "expired": 1}
    assert results["r0"].error_kind == ERRORED and results["r0"].response is None
    assert results["r1"].response.text == "Okay."
    assert results["r2"].error_kind == EXPIRED


@pytest.mark.parametrize("model", MODELS)
def test_a_request_the_live_endpoint_would_refuse_errors_inside_the_batch(
    make_client, user_request, llm_server, model
):
    llm_server.script(bad_request("Invalid value for 'messages'"))
    client = make_client(model)
    requests = three(user_request, model)

    batch_id = client.batch_submit(requests)
    results = {r.custom_id: r for r in client.batch_results(batch_id, dict(requests))}

    assert results["r0"].error_kind == ERRORED and "messages" in results["r0"].error
    assert results["r1"].response is not None


def test_the_fake_checks_each_line_against_the_sdks_request_types(
    make_client, user_request, llm_server
):
    client = make_client("openai/gpt-4o-mini")
    request = user_request("openai/gpt-4o-mini")
    provider = client._batches()
    original = client._provider.render
    client._provider.render = lambda r: {**original(r), "temprature": 0.5}

    batch_id = provider.submit([("r0", request)])
    [result] = provider.results(batch_id, {"r0": request})

    assert result.error_kind == ERRORED and "temprature: unknown field" in result.error


def test_the_fake_refuses_a_batch_body_the_sdk_types_do_not_allow(llm_server):
    import anthropic

    client = anthropic.Anthropic(api_key="k", base_url=llm_server.anthropic_base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="custom_id: required"):
        client.messages.batches.create(
            requests=[{"params": {"model": "m", "max_tokens": 5, "messages": []}}]
        )


def test_a_named_endpoint_model_has_no_batch_api(make_client, user_request):
    client = make_client("openai-compatible/judge-7b")
    with pytest.raises(ProviderError, match="no batch API"):
        client.batch_submit([("r0", user_request("openai-compatible/judge-7b"))])


# --- finding a batch whose id was never stored ----------------------------------------------

AN_HOUR_AGO = datetime.now(UTC) - timedelta(hours=1)


def tagged(user_request, model, tag):
    return [(f"{tag}-{n}", user_request(model, f"question {n}")) for n in range(2)]


@pytest.mark.parametrize("model", MODELS)
def test_a_tagged_batch_is_found_again_among_the_providers_batches(
    make_client, user_request, llm_server, model
):
    client = make_client(model)
    uploads = []
    client.batch_submit(tagged(user_request, model, "cj1xother"))  # someone else's
    batch_id = client.batch_submit(
        tagged(user_request, model, "cj2xmine"), tag="cj2xmine", uploaded=uploads.append
    )
    file_id = uploads[0] if uploads else ""

    found = client.batch_find("cj2xmine", since=AN_HOUR_AGO, input_file_id=file_id)
    missing = client.batch_find("cj3xnone", since=AN_HOUR_AGO, input_file_id=file_id)

    assert found.batch_id == batch_id and not found.undecided
    assert not missing.batch_id and not missing.undecided
    assert bool(uploads) == model.startswith("openai/")  # the file id is told before create


def test_an_openai_batch_is_found_only_by_its_input_file_and_tag(
    make_client, user_request, llm_server
):
    model = "openai/gpt-4o-mini"
    client = make_client(model)
    uploads = []
    client.batch_submit(tagged(user_request, model, "cj4xa"), tag="cj4xa", uploaded=uploads.append)

    assert not client.batch_find("cj4xa", since=AN_HOUR_AGO, input_file_id="file_other").batch_id
    assert not client.batch_find("cj4xa", since=AN_HOUR_AGO).batch_id  # never uploaded
    later = datetime.now(UTC) + timedelta(hours=1)
    assert not client.batch_find("cj4xa", since=later, input_file_id=uploads[0]).batch_id
    assert llm_server.batches.created[0].metadata == {"carejury_batch": "cj4xa"}


def test_an_anthropic_batch_still_running_leaves_the_search_undecided(
    make_client, user_request, llm_server
):
    model = "anthropic/claude-haiku-4-5"
    llm_server.batches.polls_in_progress = 1
    client = make_client(model)
    client.batch_submit(tagged(user_request, model, "cj5xa"), tag="cj5xa")

    first = client.batch_find("cj5xa", since=AN_HOUR_AGO)
    client.batch_status(llm_server.batches.created[0].id)  # its first look: in progress
    second = client.batch_find("cj5xa", since=AN_HOUR_AGO)

    assert first.undecided and not first.batch_id
    assert second.batch_id == llm_server.batches.created[0].id


def test_the_offline_scripts_find_nothing_they_cost_nothing():
    provider = OfflineBatchProvider("standard")
    assert provider.find("cj6xa", since=AN_HOUR_AGO) == Adoption()


def test_an_anthropic_batch_made_after_the_search_span_does_not_leave_it_undecided(
    make_client, user_request, llm_server
):
    model = "anthropic/claude-haiku-4-5"
    llm_server.batches.polls_in_progress = 1
    client = make_client(model)
    client.batch_submit(tagged(user_request, model, "cj7xother"), tag="cj7xother")  # running

    bounded = client.batch_find(
        "cj7xa", since=AN_HOUR_AGO, until=AN_HOUR_AGO + timedelta(minutes=20)
    )
    unbounded = client.batch_find("cj7xa", since=AN_HOUR_AGO)

    assert bounded == Adoption()
    assert unbounded.undecided
