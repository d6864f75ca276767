"""The embedded folder queue under load and with bad files in it, through real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from config import env
from tests.support.workers import (
    ROOT,
    client_app,
    start_worker,
    stop_worker,
    wait_for,
    worker_env,
)

pytestmark = pytest.mark.slow

PRODUCERS = 4
MESSAGES_EACH = 150
CONSUMERS = 3
CPU_BURNERS = 2
BINDERS = 4
EXCHANGES = 300


def helper(*arguments: object, log: Path) -> subprocess.Popen:
    with log.open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.folder_queue", *map(str, arguments)],
            cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip


def cpu_burner() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def received_ids(files: list[Path]) -> list[str]:
    return [line for file in files if file.exists() for line in file.read_text().splitlines()]


def failed(processes: dict[str, subprocess.Popen]) -> list[str]:
    return [name for name, process in processes.items() if process.poll() not in (None, 0)]


def message_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def test_racing_producers_and_consumers_under_cpu_load_deliver_every_message_once(tmp_path):
    queue_dir = tmp_path / "queue"
    env.celery_transport(None, queue_dir)
    stop_file = tmp_path / "stop"
    received = [tmp_path / f"received-{number}.txt" for number in range(CONSUMERS)]
    burners = [cpu_burner() for _ in range(CPU_BURNERS)]
    processes: dict[str, subprocess.Popen] = {}
    try:
        for number, file in enumerate(received):
            name = f"consumer-{number}"
            processes[name] = helper(
                "consume", queue_dir, file, stop_file, log=tmp_path / f"{name}.log"
            )
        for number in range(PRODUCERS):
            name = f"producer-{number}"
            processes[name] = helper(
                "produce", queue_dir, name, MESSAGES_EACH, log=tmp_path / f"{name}.log"
            )

        def all_received() -> bool:
            if crashed := failed(processes):
                logs = {name: (tmp_path / f"{name}.log").read_text()[-2000:] for name in crashed}
                raise AssertionError(f"processes stopped with an error: {logs}")
            return len(received_ids(received)) >= PRODUCERS * MESSAGES_EACH

        wait_for(all_received, timeout=120, what="every message to be received")
        stop_file.touch()
        for name, process in processes.items():
            assert process.wait(timeout=60) == 0, (tmp_path / f"{name}.log").read_text()
    finally:
        for process in [*burners, *processes.values()]:
            process.kill()
            process.wait()

    expected = {f"producer-{p}-{m}" for p in range(PRODUCERS) for m in range(MESSAGES_EACH)}
    counts = Counter(received_ids(received))
    assert {message: n for message, n in counts.items() if n > 1} == {}
    assert set(counts) == expected
    assert message_files(queue_dir / "bad") == []
    assert [name for name in message_files(queue_dir / "in") if name.endswith(".msg")] == []


def test_processes_binding_queues_at_the_same_moment_keep_every_binding(tmp_path):
    queue_dir = tmp_path / "queue"
    env.celery_transport(None, queue_dir)
    go_file = tmp_path / "go"
    ready = [tmp_path / f"ready-{binder}" for binder in range(BINDERS)]
    binders = {
        f"binder-{binder}": helper(
            "bind",
            queue_dir,
            binder,
            EXCHANGES,
            ready[binder],
            go_file,
            log=tmp_path / f"binder-{binder}.log",
        )  # fmt: skip
        for binder in range(BINDERS)
    }
    try:
        wait_for(lambda: all(file.exists() for file in ready), timeout=60, what="binders ready")
        go_file.touch()
        for name, process in binders.items():
            assert process.wait(timeout=60) == 0, (tmp_path / f"{name}.log").read_text()[-2000:]
    finally:
        for process in binders.values():
            process.kill()
            process.wait()

    everyone = {f"binder-{binder}" + "-" * binder for binder in range(BINDERS)}
    for number in range(EXCHANGES):
        table = json.loads((queue_dir / "control" / f"exchange-{number}.exchange").read_text())
        assert {queue for _, _, queue in table} == everyone, f"exchange-{number}"


def bad_message_file(queue_dir: Path, content: bytes) -> str:
    # Named as kombu names messages, with a time that sorts before any real message's.
    name = f"0_{uuid.uuid4()}.celery.msg"
    (queue_dir / "in" / name).write_bytes(content)
    return name


def test_a_worker_sets_empty_and_cut_off_message_files_aside_and_keeps_working(tmp_path):
    queue_dir = tmp_path / "queue"
    app = client_app(env.celery_transport(None, queue_dir))
    worker = start_worker(worker_env(tmp_path))
    try:
        empty = bad_message_file(queue_dir, b"")
        cut_off = bad_message_file(queue_dir, b'{"body": "eyJ0YXNrIjogImNvbmZpZy5w", "headers')
        result = app.send_task("config.ping", args=[7])

        def answered() -> bool:
            if worker.poll() is not None:
                log = (tmp_path / "worker.log").read_text()[-3000:]
                raise AssertionError(f"the worker stopped:\n{log}")
            return result.ready()

        wait_for(answered, timeout=90, what="the worker to answer the ping")
        assert result.get(timeout=10)["value"] == 7
    finally:
        stop_worker(worker)
    assert message_files(queue_dir / "bad") == sorted([empty, cut_off])
    log = (tmp_path / "worker.log").read_text()
    assert f"{empty} (empty file)" in log
    assert f"{cut_off} (not valid JSON" in log
