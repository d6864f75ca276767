"""A private PostgreSQL server a test owns: initdb into a fresh folder, start, restart, stop.

Independent of the database the test suite itself runs on, so a test can restart it under
running workers on either CI leg. As root the server runs as the `postgres` OS user
(PostgreSQL refuses to run as root). Skips when the server binaries are missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.workers import free_port

DATABASE = "carejury"


def postgres_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(found[-1]) if found and Path(found[-1], "pg_ctl").exists() else None


class PrivatePostgres:
    def __init__(self):
        self.bin_dir = postgres_bin_dir()
        if self.bin_dir is None:
            pytest.skip("PostgreSQL server binaries are missing (.ci/run installs them)")
        self.as_root = os.geteuid() == 0
        if self.as_root and shutil.which("runuser") is None:
            pytest.skip("runuser is needed to run PostgreSQL as the postgres user")
        # Not under pytest's tmp_path: its folders are private to root, the server's user
        # must be able to reach its own.
        self.home = Path(tempfile.mkdtemp(prefix="carejury-pg-"))
        self.data = self.home / "data"
        self.log = self.home / "server.log"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"
        if self.as_root:
            shutil.chown(self.home, user="postgres", group="postgres")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> PrivatePostgres:
        self._run(
            str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        self._pg_ctl("start")
        self._run(
            str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
            "-U", "postgres", DATABASE,
        )  # fmt: skip
        return self

    def restart(self) -> None:
        """Stop with every connection dropped (what a crash or a restart does) and start."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # never started
            self._pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.home, ignore_errors=True)

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.home} -c fsync=off"
        self._run(
            str(self.bin_dir / "pg_ctl"), action, *extra, "-D", str(self.data),
            "-l", str(self.log), "-o", options, "-w", "-t", "60",
        )  # fmt: skip

    def connect(self):
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=DATABASE, autocommit=True
        )
