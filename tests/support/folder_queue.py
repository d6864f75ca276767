"""Processes that publish to and consume from the embedded folder queue, for load tests.

Each runs in its own interpreter, as the web process and the workers do, through the
transport the project's Celery app uses for the embedded queue (`filesystem://`):

    python -m tests.support.folder_queue produce QUEUE_DIR PRODUCER COUNT
    python -m tests.support.folder_queue consume QUEUE_DIR RECEIVED_FILE STOP_FILE
    python -m tests.support.folder_queue bind QUEUE_DIR BINDER EXCHANGES READY_FILE GO_FILE
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kombu import Connection, Exchange, Queue

import config.celery  # noqa: F401 - the project's transport registrations, as in every process
from config import env

QUEUE_NAME = "load"
# Large, so that writing a message takes long enough for a reader to catch it half-done (with
# kombu's own transport, 600 such messages reliably stopped a consumer).
PADDING = "x" * 100_000


def connection(queue_dir: Path) -> Connection:
    transport = env.celery_transport(None, queue_dir)
    return Connection(
        transport["CELERY_BROKER_URL"],
        transport_options=transport["CELERY_BROKER_TRANSPORT_OPTIONS"],
    )


def produce(queue_dir: Path, producer: str, count: int) -> None:
    with connection(queue_dir) as broker, broker.SimpleQueue(QUEUE_NAME) as queue:
        for number in range(count):
            queue.put({"id": f"{producer}-{number}", "padding": PADDING})


def consume(queue_dir: Path, received_file: Path, stop_file: Path) -> None:
    """Record the id of every message received, one a line, until told to stop and idle."""
    with (
        connection(queue_dir) as broker,
        broker.SimpleQueue(QUEUE_NAME) as queue,
        received_file.open("a") as received,
    ):
        while True:
            try:
                message = queue.get(block=True, timeout=0.5)
            except queue.Empty:
                if stop_file.exists():
                    return
                continue
            received.write(message.payload["id"] + "\n")
            received.flush()
            message.ack()


def bind(queue_dir: Path, binder: int, exchanges: int, ready_file: Path, go_file: Path) -> None:
    """Once GO_FILE appears, bind a queue of our own to each of EXCHANGES new exchanges (as
    every worker binds its queues when it starts) and read each table (as a sender does)."""
    # Names of different lengths, so that tables written over each other would be cut off
    # rather than merely short of a binding.
    queue_name = f"binder-{binder}" + "-" * binder
    with connection(queue_dir) as broker:
        channel = broker.default_channel
        ready_file.touch()
        while not go_file.exists():
            time.sleep(0.001)
        for number in range(exchanges):
            exchange = Exchange(f"exchange-{number}", type="direct")
            Queue(queue_name, exchange, routing_key=queue_name, channel=channel).declare()
            channel.get_table(exchange.name)


if __name__ == "__main__":
    command, queue_dir, *rest = sys.argv[1:]
    if command == "produce":
        produce(Path(queue_dir), rest[0], int(rest[1]))
    elif command == "consume":
        consume(Path(queue_dir), Path(rest[0]), Path(rest[1]))
    elif command == "bind":
        bind(Path(queue_dir), int(rest[0]), int(rest[1]), Path(rest[2]), Path(rest[3]))
    else:
        raise SystemExit(f"unknown command {command!r}")
