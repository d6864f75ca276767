"""Model prices set by staff: versioned, audited, the newest wins over prices.yaml, and work
priced with the price in force when it runs (no worker restart)."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from benchmark.services import conversations
from llm.engine.chat import ChatRequest, Message, Usage
from llm.models import ModelPrice
from llm.services import prices

pytestmark = pytest.mark.django_db

UNLISTED = "openai-compatible/meta-llama/Llama-3.1-8B"


def set_price(model: str, input_price: str, output_price: str, **options) -> ModelPrice:
    return prices.price_set(
        model=model,
        input_per_million=Decimal(input_price),
        output_per_million=Decimal(output_price),
        **options,
    )


def test_a_model_missing_from_the_file_is_unpriced_until_staff_set_a_price():
    assert prices.unpriced_models([UNLISTED, "offline/careful"]) == [UNLISTED]

    set_price(UNLISTED, "0.20", "0.60")

    assert prices.unpriced_models([UNLISTED, "offline/careful"]) == []
    assert prices.catalog_in_force().price_for(UNLISTED).output_per_million == Decimal("0.6")


def test_every_change_is_a_new_row_and_the_newest_wins_over_the_file(researcher):
    set_price("openai/gpt-5.5", "2", "12", user=researcher)
    set_price("openai/gpt-5.5", "3", "15", user=researcher, note="price page, May")

    assert ModelPrice.objects.filter(model="openai/gpt-5.5").count() == 2
    assert prices.catalog_in_force().price_for("openai/gpt-5.5").input_per_million == 3
    # The data file stays the default for every other model.
    assert prices.catalog_in_force().price_for("openai/gpt-4.1").input_per_million == 2


def test_a_price_change_is_audited_with_the_price_before_and_after(researcher):
    set_price("openai/gpt-5.5", "2", "12", user=researcher)

    event = AuditEvent.objects.get(action="price.changed")
    assert event.actor == researcher
    assert event.before == {
        "model": "openai/gpt-5.5",
        "source": "prices.yaml",
        "input_per_million": "1.25",
        "output_per_million": "10.0",
        "cached_input_per_million": "0.125",
        "cache_write_per_million": None,
    }
    assert event.after["input_per_million"] == "2.000000"
    assert event.after["source"].startswith("set by staff")


@pytest.mark.parametrize(
    ("model", "complaint"),
    [("openai/*", "is a pattern"), ("gpt-5.5", "has no model name"), ("acme/x", "acme")],
)
def test_a_price_is_only_set_for_one_exact_model_string(model, complaint):
    with pytest.raises(prices.PriceError, match=complaint):
        set_price(model, "1", "1")
    assert not ModelPrice.objects.exists()


def test_a_negative_price_is_refused():
    with pytest.raises(prices.PriceError, match="between 0 and"):
        set_price(UNLISTED, "-1", "1")


def call(router, model: str):
    request = ChatRequest(
        model=model,
        purpose="assistant",
        system="You help patients.",
        messages=(Message(role="user", content="Hello"),),
    )
    return router.chat(request)


def test_work_is_priced_with_the_price_in_force_when_it_runs_without_a_restart(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "p"},
    }
    conversations.model_router.cache_clear()
    before = call(conversations.model_router(False), "offline/careful")

    set_price("offline/careful", "1000", "2000")
    after = call(conversations.model_router(False), "offline/careful")

    assert before.cost_usd == 0  # prices.yaml: offline models are free
    usage = after.usage
    assert after.cost_usd == (usage.input_tokens * 1000 + usage.output_tokens * 2000) / Decimal(
        1_000_000
    )
    assert after.cost_usd > 0


def test_the_cli_price_option_is_parsed_and_stored_like_a_browser_price():
    option = prices.price_option_parse(f"{UNLISTED}=0.2,0.6")
    prices.price_options_apply([option], note="set with --price on run_benchmark")
    prices.price_options_apply([option], note="set with --price on run_benchmark")

    row = ModelPrice.objects.get()  # the same price again adds no row
    assert (row.model, row.input_per_million, row.output_per_million) == (
        UNLISTED,
        Decimal("0.2"),
        Decimal("0.6"),
    )
    assert AuditEvent.objects.filter(action="price.changed").count() == 1


def test_the_cli_price_option_takes_the_cache_prices_after_the_plain_ones():
    option = prices.price_option_parse(f"{UNLISTED}=3,15,0.3,3.75")
    prices.price_options_apply([option], note="set with --price on run_benchmark")

    price = prices.catalog_in_force().price_for(UNLISTED)
    assert (price.cached_input_per_million, price.cache_write_per_million) == (
        Decimal("0.3"),
        Decimal("3.75"),
    )


@pytest.mark.parametrize(
    "text", ["openai/x", "openai/x=1", "openai/x=1,2,3,4,5", "=1,2", "a/b=x,1", "a/b=1,2,-3"]
)
def test_a_malformed_cli_price_option_is_refused_with_the_expected_form(text):
    with pytest.raises(prices.PriceError):
        prices.price_option_parse(text)


# --- the prices page ------------------------------------------------------------------------


def test_the_prices_page_lists_the_file_and_the_prices_set_here(researcher_client, researcher):
    set_price(UNLISTED, "0.20", "0.60", user=researcher, note="our vLLM box")

    page = researcher_client.get(reverse("benchmark:prices")).content.decode()

    assert "openai/gpt-5.5" in page and "offline/*" in page  # prices.yaml, in file order
    assert UNLISTED in page and "our vLLM box" in page and "rita" in page
    assert "$0.6" in page


def test_staff_set_a_price_in_the_browser_and_it_is_versioned(researcher_client):
    url = reverse("benchmark:prices")
    for output in ("0.60", "0.80"):
        response = researcher_client.post(
            url,
            {"model": UNLISTED, "input_per_million": "0.20", "output_per_million": output},
        )
        assert response.status_code == 302

    assert ModelPrice.objects.filter(model=UNLISTED).count() == 2
    assert prices.catalog_in_force().price_for(UNLISTED).output_per_million == Decimal("0.8")
    page = researcher_client.get(url).content.decode()
    assert "$0.8" in page and "$0.6" in page  # in force, and in the history


def test_the_price_form_refuses_a_pattern_beside_the_field(researcher_client):
    response = researcher_client.post(
        reverse("benchmark:prices"),
        {"model": "openai/*", "input_per_million": "1", "output_per_million": "1"},
    )

    assert response.status_code == 200
    assert "is a pattern" in response.content.decode()
    assert not ModelPrice.objects.exists()


def test_staff_set_cache_prices_in_the_browser_and_calls_are_billed_with_them(researcher_client):
    fields = {"model": UNLISTED, "input_per_million": "2", "output_per_million": "8"}
    response = researcher_client.post(
        reverse("benchmark:prices"), {**fields, "cached_input_per_million": "0.5"}
    )

    assert response.status_code == 302
    row = ModelPrice.objects.get()
    assert (row.cached_input_per_million, row.cache_write_per_million) == (Decimal("0.5"), None)
    price = prices.catalog_in_force().price_for(UNLISTED)
    usage = Usage(1000, 0, cached_input_tokens=800)
    assert price.cost(usage) == (200 * 2 + 800 * Decimal("0.5")) / Decimal(1_000_000)
    page = researcher_client.get(reverse("benchmark:prices")).content.decode()
    assert "Cached input / M" in page and re.search(r"\$0\.5\s*<", page) and "= input" in page


def test_a_negative_cache_price_is_refused_beside_its_field(researcher_client):
    response = researcher_client.post(
        reverse("benchmark:prices"),
        {
            "model": UNLISTED,
            "input_per_million": "2",
            "output_per_million": "8",
            "cache_write_per_million": "-1",
        },
    )

    assert response.status_code == 200
    assert "greater than or equal to 0" in response.content.decode()
    assert not ModelPrice.objects.exists()


def test_the_service_refuses_a_negative_cache_price_naming_it():
    with pytest.raises(prices.PriceError, match="The cached input price must be a number"):
        set_price(UNLISTED, "2", "8", cached_input_per_million=Decimal("-0.1"))
    assert not ModelPrice.objects.exists()


def stamp_now() -> str:
    """The stamp a task's first query reads (any table with a row will carry it)."""
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.annotate(stamp=prices.prices_stamp()).values_list(
        "stamp", flat=True
    )[0]


def test_a_new_price_changes_the_stamp_and_the_prices_read_under_it():
    before = stamp_now()
    set_price(UNLISTED, "1", "2")
    after = stamp_now()

    assert after != before
    assert [row[0] for row in prices.price_overrides_as_of(after)] == [UNLISTED]


def test_a_price_committed_after_one_with_a_higher_key_changes_the_stamp():
    # PostgreSQL hands out keys as rows are inserted, not as they are committed: the newest
    # key alone would not tell a worker that this row arrived.
    ModelPrice.objects.create(pk=900, model="offline/careful", input_per_million=1,
                              output_per_million=1)  # fmt: skip
    seen = stamp_now()
    prices.price_overrides_as_of(seen)
    late = ModelPrice.objects.create(pk=800, model="offline/careless", input_per_million=3,
                                     output_per_million=3)  # fmt: skip
    # Its time was set before the other's, as a transaction that began first and committed
    # last would have it: only the count tells that it arrived.
    earlier = ModelPrice.objects.get(pk=900).created_at - timedelta(seconds=1)
    ModelPrice.objects.filter(pk=late.pk).update(created_at=earlier)

    later = stamp_now()
    assert later != seen
    assert {row[0] for row in prices.price_overrides_as_of(later)} == {
        "offline/careful",
        "offline/careless",
    }


def test_a_price_that_takes_the_key_of_a_rolled_back_one_changes_the_stamp():
    # SQLite gives a rolled-back row's key to the next row (a flushed test database): a
    # process must not keep the prices it read under that key.
    first = set_price(UNLISTED, "1", "2")
    seen = stamp_now()
    prices.price_overrides_as_of(seen)
    key, when = first.pk, first.created_at
    first.delete()
    ModelPrice.objects.create(pk=key, model=UNLISTED, input_per_million=5, output_per_million=6)
    ModelPrice.objects.filter(pk=key).update(created_at=when + timedelta(seconds=1))

    later = stamp_now()
    assert later != seen
    assert prices.price_overrides_as_of(later)[0][1:3] == (Decimal("5"), Decimal("6"))


def test_a_conversation_is_priced_with_a_price_set_after_the_one_before(run):
    # The prices come with the conversation's row (one query fewer); a worker that played the
    # run's first conversation must still price the next one with a price set in between.
    first, second = run.conversations.order_by("pk")[:2]
    assert conversations.conversation_execute(first.pk)
    set_price(first.run_agent.model, "1000", "2000")
    set_price(run.patient_model, "1000", "2000")
    assert conversations.conversation_execute(second.pk)

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.cost_usd == 0  # prices.yaml: offline models are free
    assert second.cost_usd > 0
