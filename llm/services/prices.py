"""Model prices in force: llm/data/prices.yaml, the default, with the prices staff set (in
the browser, or with a CLI's --price) laid over it. Every change is a new ModelPrice row and
the newest row of a model wins, so the history stays and nothing is ever overwritten.

This is the one place that answers "what does a call of this model cost now" and "which of
these models has no price". Work reads the prices in force once per task (one small query,
see `price_overrides`), so a price set while a job runs applies to the work sent after it
without restarting any worker, and a call's cost is always the price in force when it ran.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from django.db import connection, transaction
from django.db.models import CharField, Max
from django.db.models.expressions import RawSQL

from audit.services import audit_record
from llm.engine.chat import ProviderError
from llm.engine.providers.catalog import ModelCatalog, Price, default_catalog
from llm.engine.providers.model_strings import parse_model_string
from llm.models import ModelPrice

MAX_PRICE = Decimal("999999")  # USD per million tokens; ModelPrice holds 12 digits, 6 decimals
PATTERN_CHARACTERS = "*?["

# (model, input, output, cached input or None, cache write or None), per million tokens.
Overrides = tuple[tuple[str, Decimal, Decimal, Decimal | None, Decimal | None], ...]
# A price's figures in Price's order, as ModelPrice stores them.
PRICE_FIELDS = (
    "input_per_million",
    "output_per_million",
    "cached_input_per_million",
    "cache_write_per_million",
)


class PriceError(ValueError):
    """A price that cannot be set as given; the message says why."""


def price_overrides() -> Overrides:
    """The newest staff price of every model, as (model, *PRICE_FIELDS) sorted by model: a
    hashable snapshot of the prices in force, read in one query."""
    newest = ModelPrice.objects.values("model").annotate(newest=Max("pk")).values("newest")
    rows = ModelPrice.objects.filter(pk__in=newest).order_by("model")
    return tuple(rows.values_list("model", *PRICE_FIELDS))


def prices_stamp() -> RawSQL:
    """What names the prices in force: how many price rows there are and when the newest was
    set, as an expression a task's first query can carry (`.annotate(...)`), so the prices need
    no query of their own while they stay as they were. Rows are only ever added, so every
    change changes the stamp: a row committed after one with a higher key changes the count
    (the newest key alone would miss it), and a row that took the key of a row rolled back (a
    flushed test database) changes the time."""
    table = connection.ops.quote_name(ModelPrice._meta.db_table)
    return RawSQL(
        "SELECT CAST(COUNT(*) AS TEXT) || '@' || COALESCE(CAST(MAX(created_at) AS TEXT), '') "
        f"FROM {table}",
        (),
        output_field=CharField(),
    )


@lru_cache(maxsize=4)
def price_overrides_as_of(stamp: str) -> Overrides:
    """`price_overrides`, read once per process and `prices_stamp()`. Read after the stamp, they
    may be newer than it (a price set in between), never older."""
    return price_overrides()


@lru_cache(maxsize=8)
def catalog_with(overrides: Overrides) -> ModelCatalog:
    """prices.yaml with these staff prices laid over it."""
    return default_catalog().with_prices({model: Price(*figures) for model, *figures in overrides})


def catalog_in_force() -> ModelCatalog:
    return catalog_with(price_overrides())


def unpriced_models(models: Iterable[str]) -> list[str]:
    """The models (each once) that have no price in force: neither in prices.yaml nor set."""
    return catalog_in_force().unpriced(models)


@transaction.atomic
def price_set(
    *,
    model: str,
    input_per_million: Decimal,
    output_per_million: Decimal,
    cached_input_per_million: Decimal | None = None,
    cache_write_per_million: Decimal | None = None,
    note: str = "",
    user=None,
) -> ModelPrice:
    """Set the price of one exact model string (a new row; the newest wins), audited as
    `price.changed` with the price in force before and after. A cache price left out (None)
    is the input price."""
    model = model_string_check(model)
    amounts = {
        "input_per_million": _amount("input", input_per_million),
        "output_per_million": _amount("output", output_per_million),
        "cached_input_per_million": _optional_amount("cached input", cached_input_per_million),
        "cache_write_per_million": _optional_amount("cache write", cache_write_per_million),
    }
    before = price_in_force(model)
    row = ModelPrice(model=model, **amounts, note=note.strip(), created_by=user)
    row.full_clean()
    row.save()
    audit_record(
        actor=user,
        action="price.changed",
        target=row,
        before={"model": model, **before},
        after={"model": model, **price_in_force(model)},
    )
    return row


def model_string_check(model: str) -> str:
    """An exact model string (a price is never set for a pattern of them)."""
    model = model.strip()
    if any(character in model for character in PATTERN_CHARACTERS):
        raise PriceError(
            f"{model!r} is a pattern; set a price for one exact model string "
            "(patterns belong in llm/data/prices.yaml)."
        )
    try:
        parse_model_string(model)
    except ProviderError as error:
        raise PriceError(str(error)) from None
    return model


def _amount(name: str, value) -> Decimal:
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or not 0 <= amount <= MAX_PRICE:
        raise PriceError(
            f"The {name} price must be a number of dollars per million tokens between 0 and "
            f"{MAX_PRICE:,}, not {value!r}."
        )
    return amount.quantize(Decimal("0.000001"))


def _optional_amount(name: str, value) -> Decimal | None:
    return None if value is None or str(value).strip() == "" else _amount(name, value)


def price_in_force(model: str) -> dict:
    """The price a call of `model` gets now and where it comes from, for the audit trail."""
    newest = ModelPrice.objects.filter(model=model).order_by("-pk").first()
    if newest is not None:
        return {"source": f"set by staff (price #{newest.pk})", **_figures(newest)}
    price = default_catalog().price_for(model)
    if price is None:
        return {"source": "none", **dict.fromkeys(PRICE_FIELDS)}
    return {"source": "prices.yaml", **_figures(price)}


def _figures(price) -> dict:
    """A price's figures as text (None for a cache price left to the input price)."""
    figures = {name: getattr(price, name) for name in PRICE_FIELDS}
    return {name: None if value is None else str(value) for name, value in figures.items()}


# --- the CLI's --price MODEL=INPUT,OUTPUT ---------------------------------------------------


@dataclass(frozen=True)
class PriceOption:
    model: str
    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal | None = None
    cache_write_per_million: Decimal | None = None

    @property
    def price(self) -> Price:
        return Price(*(getattr(self, name) for name in PRICE_FIELDS))


def price_option_parse(text: str) -> PriceOption:
    """`MODEL=INPUT,OUTPUT[,CACHED[,CACHE_WRITE]]` (USD per million tokens), e.g.
    `openai-compatible/llama=0.2,0.6` or `anthropic/claude-x=3,15,0.3,3.75`."""
    model, equals, figures = text.rpartition("=")
    parts = figures.split(",")
    if not equals or not model.strip() or not 2 <= len(parts) <= 4:
        raise PriceError(
            f"--price {text!r}: expected MODEL=INPUT,OUTPUT[,CACHED[,CACHE_WRITE]] in dollars "
            "per million tokens, e.g. openai-compatible/llama=0.20,0.60."
        )
    names = ("input", "output", "cached input", "cache write")
    amounts = [_amount(name, part) for name, part in zip(names, parts, strict=False)]
    return PriceOption(model_string_check(model), *amounts)


def price_options_apply(options: Iterable[PriceOption], *, note: str) -> list[ModelPrice]:
    """Store each --price like a price set in the browser (a new, audited row), unless the
    model already has that very price in force."""
    saved = []
    for option in options:
        if catalog_in_force().price_for(option.model) != option.price:
            figures = {name: getattr(option, name) for name in PRICE_FIELDS}
            saved.append(price_set(model=option.model, **figures, note=note))
    return saved


# --- the prices page ------------------------------------------------------------------------


@dataclass(frozen=True)
class FilePrice:
    key: str  # a model string or a glob pattern
    price: Price | None
    overridden_by: ModelPrice | None  # the staff price that wins over it (exact keys only)


def file_prices() -> list[FilePrice]:
    """prices.yaml's entries in file order, each with the staff price that replaces it."""
    current = {row.model: row for row in current_prices()}
    return [
        FilePrice(key, entry.price, current.get(key))
        for key, entry in default_catalog().entries.items()
    ]


def current_prices() -> list[ModelPrice]:
    """The newest staff price of each model, by model string."""
    newest = ModelPrice.objects.values("model").annotate(newest=Max("pk")).values("newest")
    return list(ModelPrice.objects.filter(pk__in=newest).select_related("created_by"))


def price_history(limit: int = 200) -> list[ModelPrice]:
    return list(ModelPrice.objects.select_related("created_by").order_by("-pk")[:limit])
