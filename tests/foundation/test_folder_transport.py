"""The embedded queue's transport publishes whole files and survives files that hold nothing.

Racing processes under load and a real worker meeting bad files: tests/workers/test_folder_queue.py
"""

import base64
import json
import os
import threading
import time
import uuid
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from config import env, folder_transport
from config.celery import app


def connection(queue_dir: Path) -> Connection:
    transport = env.celery_transport(None, queue_dir)
    return Connection(
        transport["CELERY_BROKER_URL"],
        transport_options=transport["CELERY_BROKER_TRANSPORT_OPTIONS"],
    )


@pytest.fixture
def queue_name() -> str:
    # kombu keeps the bindings it declared for the whole process and does not write them
    # again into another test's folder: a fresh name per test.
    return f"jobs-{uuid.uuid4().hex}"


def test_the_projects_celery_app_uses_this_transport_for_the_embedded_queue(tmp_path):
    with app.connection_for_write(env.celery_transport(None, tmp_path)["CELERY_BROKER_URL"]) as c:
        assert isinstance(c.transport, folder_transport.Transport)


def test_a_message_is_invisible_to_readers_until_it_is_written_whole(
    tmp_path, monkeypatch, queue_name
):
    seen_while_writing = []
    real_fsync = os.fsync

    with connection(tmp_path / "queue") as writer, connection(tmp_path / "queue") as reader:
        reading = reader.default_channel
        outgoing = writer.SimpleQueue(queue_name)  # declared (its binding written) beforehand

        def look_while_writing(descriptor: int) -> None:
            seen_while_writing.append(reading._size(queue_name))
            with pytest.raises(Empty):
                reading._get(queue_name)
            real_fsync(descriptor)

        monkeypatch.setattr(os, "fsync", look_while_writing)
        outgoing.put({"n": 1})
        monkeypatch.undo()
        assert seen_while_writing == [0]
        assert reading._size(queue_name) == 1
        assert reader.SimpleQueue(queue_name).get(timeout=10).payload == {"n": 1}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty file"),
        (b'{"body": "eyJ0YXNr", "headers": {', "not valid JSON"),
        (b"\xff\xfe\x00", "not UTF-8 text"),
        (b'{"body": "eyJ0YXNr"}', "JSON, but not a kombu message"),
        (b"[1, 2]", "JSON, but not a kombu message"),
    ],
)
def test_a_file_that_holds_no_message_is_set_aside_and_the_next_message_delivered(
    tmp_path, caplog, queue_name, content, reason
):
    queue_dir = tmp_path / "queue"
    bad_name = f"0_{uuid.uuid4()}.{queue_name}.msg"  # sorts before the real message
    with connection(queue_dir) as broker, broker.SimpleQueue(queue_name) as queue:
        queue.put({"n": 1})
        (queue_dir / "in" / bad_name).write_bytes(content)
        message = queue.get(timeout=10)
        assert message.payload == {"n": 1}
        message.ack()
        with pytest.raises(queue.Empty):
            queue.get(timeout=0.5)
    assert os.listdir(queue_dir / "bad") == [bad_name]
    assert (queue_dir / "bad" / bad_name).read_bytes() == content  # kept as it was
    assert os.listdir(queue_dir / "in") == []
    assert f"Set aside the queue file {bad_name} ({reason}" in caplog.text


def test_processed_messages_are_kept_only_when_asked(tmp_path, queue_name):
    queue_dir = tmp_path / "queue"
    options = env.celery_transport(None, queue_dir)["CELERY_BROKER_TRANSPORT_OPTIONS"]
    for keep in (False, True):
        with Connection(
            "filesystem://", transport_options={**options, "store_processed": keep}
        ) as c:
            queue = c.SimpleQueue(queue_name)
            queue.put({"kept": keep})
            queue.get(timeout=10).ack()
    kept = [
        json.loads((queue_dir / "processed" / name).read_bytes())
        for name in os.listdir(queue_dir / "processed")
    ]
    assert [base64.b64decode(message["body"]) for message in kept] == [b'{"kept": true}']


def test_a_worker_told_to_stop_ends_its_wait_for_messages_at_the_next_poll(
    tmp_path, monkeypatch, queue_name
):
    # Celery's SIGTERM handler sets the exit code, 0 for a warm shutdown.
    monkeypatch.setattr("celery.worker.state.should_stop", 0)
    with connection(tmp_path / "queue") as listening:
        waiting = listening.SimpleQueue(queue_name)
        started = time.monotonic()
        with pytest.raises(waiting.Empty):
            waiting.get(timeout=10)
    assert time.monotonic() - started < 5


def test_a_process_not_stopping_waits_out_its_timeout_and_takes_a_message_sent_meanwhile(
    tmp_path, queue_name
):
    with connection(tmp_path / "queue") as listening, connection(tmp_path / "queue") as sending:
        waiting = listening.SimpleQueue(queue_name)
        started = time.monotonic()
        with pytest.raises(waiting.Empty):
            waiting.get(timeout=0.5)
        assert time.monotonic() - started >= 0.5
        threading.Timer(0.3, sending.SimpleQueue(queue_name).put, args=[{"n": 1}]).start()
        assert waiting.get(timeout=10).payload == {"n": 1}
