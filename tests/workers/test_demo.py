"""The demo started as a user would: short output, its notifications sent by its worker with
links to the address it serves on, and stopping it stops its worker."""

import argparse
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from portal.management.commands import demo as demo_command
from portal.management.commands.demo import Command as DemoCommand
from tests.support.workers import ROOT, free_port, wait_for


def alive(pid: int) -> bool:
    """A running process (a zombie has exited, it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def worker_pid(output: Path) -> int | None:
    for line in output.read_text().splitlines():
        if line.startswith("Worker started (pid "):
            return int(line.removeprefix("Worker started (pid ").split(",")[0])
    return None


def test_getting_started_names_every_option_of_the_demo_command():
    parser = argparse.ArgumentParser(add_help=False)
    DemoCommand().add_arguments(parser)
    options = [option for action in parser._actions for option in action.option_strings]
    page = (ROOT / "docs/getting-started.md").read_text(encoding="utf-8")
    assert "--addr" in options
    assert [option for option in options if option not in page] == []


@pytest.mark.parametrize(
    ("addr", "site"),
    [("8123", "http://127.0.0.1:8123"), ("10.0.0.5:8000", "http://10.0.0.5:8000"),
     ("ward-pc.example:9000", "http://ward-pc.example:9000"), ("[::1]:8000", "http://[::1]:8000")],
)  # fmt: skip
def test_the_demo_links_to_the_address_it_serves_on(addr, site):
    assert demo_command.site_url_of(addr) == site


def test_addr_sets_site_url_for_the_server_and_its_worker_unless_it_is_set(monkeypatch, settings):
    settings.SITE_URL = "http://127.0.0.1:8000"  # the default, restored afterwards
    monkeypatch.setenv("SITE_URL", "kept")
    monkeypatch.delenv("SITE_URL")
    site = demo_command._use_site_url("0.0.0.0:8123")  # every interface: this machine's name
    assert site == f"http://{socket.getfqdn()}:8123"
    assert os.environ["SITE_URL"] == site  # the worker starts with it
    assert site == settings.SITE_URL  # the server's own links
    monkeypatch.setenv("SITE_URL", "https://care.example.org")
    settings.SITE_URL = "https://care.example.org"
    assert demo_command._use_site_url("9000") == "https://care.example.org"
    assert os.environ["SITE_URL"] == "https://care.example.org"


@pytest.mark.slow
def test_stopping_the_demo_with_sigterm_also_stops_its_worker(tmp_path):
    # Ctrl-C takes the same path: runserver turns it into SystemExit, SIGTERM is turned into one.
    port = free_port()
    skipped = {"REDIS_URL", "DATABASE_URL", "SITE_URL"}
    environment = {k: v for k, v in os.environ.items() if k not in skipped}
    environment.update(DATA_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    output = tmp_path / "demo.out"
    command = [sys.executable, "manage.py", "demo", "--serve",
               "--addr", f"127.0.0.1:{port}", "--cases", "1"]  # fmt: skip
    with open(output, "w") as out:
        demo = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=out)
    pid = None
    try:
        wait_for(
            lambda: serving(f"http://127.0.0.1:{port}/accounts/login/") or demo.poll() is not None,
            timeout=300,
            interval=0.5,
            what="the demo to serve",
        )
        assert demo.poll() is None, output.read_text()
        pid = worker_pid(output)
        assert pid is not None and alive(pid), output.read_text()
        # The demo's worker sends its notifications with the console backend, into its log:
        # the reassignment to `operations` among them.
        log = tmp_path / "worker.log"
        wait_for(
            lambda: "Subject: An item was handed to you in Target study" in log.read_text(),
            timeout=120,
            what="the demo's worker to send the reassignment notice",
        )
        wait_for(
            lambda: "Subject: An item waits for adjudication in Target study" in log.read_text(),
            timeout=120,
            what="the demo's worker to tell the senior clinician what waits",
        )
        sent = log.read_text()  # every link to the address the demo serves on
        assert f"http://127.0.0.1:{port}/annotation/adjudication/" in sent
        assert f"http://127.0.0.1:{port}/annotation/items/" in sent
        assert "http://127.0.0.1:8000/" not in sent
        wait_for(
            lambda: f"\n{demo_command.DATA_READY}" in output.read_text(),
            timeout=300,
            what="the demo to finish building its data",
        )
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=60)
        wait_for(lambda: not alive(pid), timeout=30, what="the worker to stop")
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        if pid is not None and alive(pid):
            os.killpg(pid, signal.SIGKILL)  # the demo's own worker, left behind
    text = output.read_text()
    assert "Stopping the demo and its worker" in text and "Traceback" not in text
    # The site answers first; its data is built while it serves.
    assert text.index("Demo site:") < text.index(f"\n{demo_command.DATA_READY}"), text
    # Short and readable: a line per stage and per login, no progress-bar redraws, no banner.
    assert len(text.splitlines()) <= 14, text
    assert "\r" not in text and "development server" not in text
