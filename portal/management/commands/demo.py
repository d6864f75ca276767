"""Build a ready-to-use demo site on the embedded default and optionally serve it: a benchmark
run, its jury scores, clinician studies and the rubric lab, each built by its own app."""

import logging
import os
import socket
import sys
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.management.commands.runserver import naiveip_re
from django.db import connection

from accounts.services import demo_people_ensure
from annotation.services.demo import annotation_demo_ensure
from jobs.services.starts import job_start
from jury.services.scoring import scoring_start
from portal.services import demo
from rubric_lab.services.demo import lab_demo_build

POLL_SECONDS = 0.5
# The line that says every demo page has its data (bench/bench_first_minute.py waits for it).
DATA_READY = "Demo data ready."


class Command(BaseCommand):
    help = "Create demo users and demo data through the real pipeline (offline scripted provider)."

    def add_arguments(self, parser):
        parser.add_argument("--serve", action="store_true", help="start the site afterwards")
        parser.add_argument(
            "--addr",
            default="127.0.0.1:8000",
            help="address:port to serve on; the links in the demo's emails point there too "
            "(unless SITE_URL is set)",
        )
        parser.add_argument(
            "--cases",
            type=int,
            default=demo.DEMO_SET_SIZE,
            help="cases in the demo set when it is first built (default %(default)s)",
        )

    def handle(self, *args, serve: bool, addr: str, cases: int, **options):
        if cases < 1:
            raise CommandError("--cases must be at least 1.")
        if serve:
            _check_address_free(addr)  # before minutes of work, and runserver would os._exit
        site = _use_site_url(addr)  # before the worker starts: it writes the emails
        _allow_private_webhooks()  # likewise: the worker sends them
        call_command("migrate", interactive=False, verbosity=0)
        people = demo_people_ensure()
        self.stdout.write(
            f"CareJury demo: data in {settings.DATA_DIR}, {settings.QUEUE_MODE} task "
            "queue, offline scripted provider"
        )
        try:
            with demo.demo_worker() as worker:
                self.stdout.write(f"Worker started (pid {worker.pid}, log {_worker_log()})")
                if not serve:
                    self._build_data(worker, cases)
                    self._print_logins(site, people, serve)
                    return
                # Serve first: the pages of the set, run and jobs being built show their own
                # live progress, so a newcomer can look around while the data is made.
                self._build_in_background(worker, cases)
                self._print_logins(site, people, serve)
                self._serve(addr)
        except KeyboardInterrupt:  # Ctrl-C while building: the worker is stopped already
            raise SystemExit(130) from None

    def _serve(self, addr: str) -> None:
        # Every htmx poll would print a line: show only the requests that failed. A filter,
        # not a level: the server's django.setup() configures the logging again.
        logging.getLogger("django.server").addFilter(_failed_requests_only)
        try:
            call_command("runserver", addr, use_reloader=False, stdout=_Silent())
        finally:
            self.stdout.write("Stopping the demo and its worker...")

    def _build_in_background(self, worker, cases: int) -> None:
        def build() -> None:
            try:
                self._build_data(worker, cases)
            except Exception as error:  # noqa: BLE001 - the server goes on; say what stopped
                self.stderr.write(f"Building the demo data stopped: {error}")
            finally:
                connection.close()  # this thread's own database connection

        threading.Thread(target=build, name="demo-data", daemon=True).start()
        self.stdout.write(
            "Building the demo data while the site starts: its pages show their progress, "
            f'and "{DATA_READY}" follows here when it is all there.'
        )

    def _build_data(self, worker, cases: int) -> None:
        def wait(count, total, label):
            self._wait(worker, count, total, label)

        benchmark_set = demo.demo_set_ensure(job_start, wait, size=cases)
        run = demo.demo_run_ensure(benchmark_set, job_start, wait)
        job = demo.demo_scoring_ensure(run, scoring_start, wait)
        demo.demo_review_ensure(run, job_start, wait)
        annotation_demo_ensure(job)
        demo.demo_calibration_ensure(scoring_start, wait)
        lab_demo_build(run)
        self.stdout.write(self.style.SUCCESS(DATA_READY))

    def _wait(self, worker, count, total: int, label: str) -> None:
        """Poll until `count()` reaches `total`: one line per stage (updated in place on a
        terminal); a worker that died is reported instead of waited on forever."""
        started = time.monotonic()
        live = sys.stdout.isatty()
        while (done := count()) < total:
            if worker.poll() is not None:
                raise CommandError(
                    f"The worker stopped (exit code {worker.returncode}); see {_worker_log()}."
                )
            if live:
                self.stdout.write(f"\r  {label}: {done}/{total}", ending="")
                self.stdout.flush()
            time.sleep(POLL_SECONDS)
        elapsed = time.monotonic() - started
        self.stdout.write(("\r" if live else "") + f"  {label}: {total}/{total} ({elapsed:.0f} s)")

    def _print_logins(self, site: str, people, serve: bool) -> None:
        stop = "; stop it with Ctrl-C" if serve else ""
        self.stdout.write(self.style.SUCCESS(f"Demo site: {site}/{stop}"))
        for username, password, role in people:
            self.stdout.write(f"  {role:<30} username {username:<11} password {password}")


class _Silent:
    """Swallows runserver's banner; its errors go to stderr and still show."""

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def _failed_requests_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _worker_log() -> str:
    return str(settings.DATA_DIR / "worker.log")


def _use_site_url(addr: str) -> str:
    """The address the demo's links point at: SITE_URL when it is set, else --addr's, for this
    process (the server) and the worker it starts (which sends the emails)."""
    if "SITE_URL" in os.environ:
        return settings.SITE_URL
    site = site_url_of(addr)
    os.environ["SITE_URL"] = settings.SITE_URL = site
    return site


def _allow_private_webhooks() -> None:
    """A demo's webhook receivers run on this machine: let its server and worker send to
    local addresses (unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES says otherwise)."""
    if "WEBHOOK_ALLOW_PRIVATE_ADDRESSES" not in os.environ:  # else the settings read it
        os.environ["WEBHOOK_ALLOW_PRIVATE_ADDRESSES"] = "1"
        settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True


def site_url_of(addr: str) -> str:
    """http://host:port for an --addr; a server on every interface is reached by this
    machine's name."""
    match = naiveip_re.match(addr)
    if match is None:
        raise CommandError(f"--addr {addr!r} is not a port or an address:port.")
    host, _ipv4, _ipv6, _fqdn, port = match.groups()
    if host in ("0.0.0.0", "[::]"):
        host = socket.getfqdn()
    return f"http://{host or '127.0.0.1'}:{port}"


def _check_address_free(addr: str) -> None:
    """Refuse an address runserver could not bind: it would exit without any cleanup."""
    match = naiveip_re.match(addr)
    if match is None:
        raise CommandError(f"--addr {addr!r} is not a port or an address:port.")
    host, _ipv4, ipv6, _fqdn, port = match.groups()
    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(((host or "127.0.0.1").strip("[]"), int(port)))
        except OSError as error:
            raise CommandError(
                f"Cannot serve on {addr}: {error.strerror}. Pick another --addr."
            ) from None
