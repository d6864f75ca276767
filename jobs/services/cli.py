"""Progress bars, cost lines and --price options of the long CLI operations."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal

from django.core.management.base import CommandError
from tqdm import tqdm

from llm.services import prices


def progress_bar(total: int, label: str) -> tqdm:
    return tqdm(total=total, desc=label, unit="item", dynamic_ncols=True)


def wait_until(
    done: Callable[[], int],
    *,
    total: int,
    label: str,
    poll: float = 1.0,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Poll `done()` (a count) until it reaches `total` or `stop()` says so; draws a bar."""
    with progress_bar(total, label) as bar:
        while True:
            count = done()
            bar.update(count - bar.n)
            if count >= total or (stop and stop()):
                return
            time.sleep(poll)


def cost_text(*, cost: Decimal | None, calls: int, cached: int) -> str:
    """A job's cost for a summary line: "unknown" when some call had no price (never a smaller
    known sum), "cached" when the response cache answered every call (nothing spent now)."""
    if calls and cached == calls:
        return f"nothing spent now (all {calls} calls cached)"
    figure = "unknown (some calls have no price)" if cost is None else f"${cost:.4f}"
    return f"{figure}, {cached} of {calls} calls cached" if cached else figure


def add_price_argument(parser) -> None:
    """The --price option of every command that launches paid work."""
    parser.add_argument(
        "--price",
        action="append",
        metavar="MODEL=INPUT,OUTPUT",
        help="set a model's price in USD per million input and output tokens, stored and "
        "audited like a price set on the Prices page; repeatable",
    )


def price_options(texts: list[str] | None, *, command: str) -> None:
    """Apply a command's --price MODEL=INPUT,OUTPUT options as prices set by staff would be
    (stored, versioned and audited), before the job is checked and launched."""
    try:
        options = [prices.price_option_parse(text) for text in texts or []]
    except prices.PriceError as error:
        raise CommandError(str(error)) from None
    prices.price_options_apply(options, note=f"set with --price on {command}")
