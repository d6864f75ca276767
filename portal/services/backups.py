"""Backing up and restoring a whole site: the database and DATA_DIR, in one folder with a
manifest that holds each file's SHA-256.

SQLite is copied with its online backup API (a consistent copy while the site keeps running);
PostgreSQL with `pg_dump --format=custom` and restored with `pg_restore`. DATA_DIR goes into a
gzipped tar, leaving out the database file itself, the static files (`collectstatic` rebuilds
them) and test databases. A restore checks every checksum before it touches anything and
refuses to write over a database that holds data unless asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from audit.services import audit_record

MANIFEST = "manifest.json"
FORMAT = "carejury-backup/1"
SQLITE_FILE = "database.sqlite3"
POSTGRES_FILE = "database.dump"
DATA_FILE = "data.tar.gz"
# Tables that a freshly migrated, never used database already fills.
SETUP_TABLES = {
    "django_migrations",
    "django_content_type",
    "auth_permission",
    "django_session",
    "audit_auditchainhead",
}

Progress = Callable[[str], None]


class BackupError(Exception):
    """A backup or restore that cannot go ahead; the message says why and what to do."""


@dataclass(frozen=True)
class BackupSummary:
    folder: Path
    files: dict[str, str]  # name -> SHA-256


def backup_write(destination: Path, *, progress: Progress = print) -> BackupSummary:
    """Write the database and DATA_DIR into `destination`, a new or empty folder."""
    destination = Path(destination)
    _refuse_inside_transaction()
    if destination.exists() and any(destination.iterdir()):
        raise BackupError(f"{destination} is not empty; give a new folder for each backup.")
    destination.mkdir(parents=True, exist_ok=True)
    progress(f"Copying the {connection.vendor} database...")
    database_file = _database_dump(destination, progress)
    progress("Packing DATA_DIR...")
    _data_pack(destination / DATA_FILE)
    files = {name: file_sha256(destination / name) for name in (database_file, DATA_FILE)}
    manifest = {
        "format": FORMAT,
        "created_at": timezone.now().isoformat(),
        "engine": connection.vendor,
        "migrations": _latest_migrations(),
        "files": files,
    }
    (destination / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    audit_record(
        actor=None, action="site.backed_up", target=None, after={"folder": str(destination)}
    )
    progress(f"Backup written to {destination}.")
    return BackupSummary(destination, files)


def backup_restore(source: Path, *, force: bool = False, progress: Progress = print) -> None:
    """Put the backup in `source` back: the database, then DATA_DIR's files."""
    source = Path(source)
    _refuse_inside_transaction()
    manifest = backup_check(source)
    if manifest["engine"] != connection.vendor:
        raise BackupError(
            f"The backup holds a {manifest['engine']} database; this site uses "
            f"{connection.vendor}. Restore it on a site configured like the one it came from."
        )
    filled = tables_with_rows()
    if filled and not force:
        raise BackupError(
            f"The database already holds data ({', '.join(filled[:5])}...); restoring would "
            "replace all of it. Run it again with --force if that is what you want."
        )
    progress("Restoring the database...")
    _database_load(source, progress)
    progress("Restoring DATA_DIR...")
    _data_unpack(source / DATA_FILE)
    audit_record(actor=None, action="site.restored", target=None, after={"folder": str(source)})
    progress(f"Restored the backup of {manifest['created_at']}.")


def backup_check(source: Path) -> dict:
    """The backup's manifest once every file it lists matches its checksum."""
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{source} holds no {MANIFEST}; it is not a backup folder.") from None
    except json.JSONDecodeError as error:
        raise BackupError(f"{source / MANIFEST} is not valid JSON: {error}") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(
            f"{source} is a backup of format {manifest.get('format')!r}, not {FORMAT}."
        )
    for name, expected in manifest["files"].items():
        path = source / name
        if not path.is_file():
            raise BackupError(f"The backup's {name} is missing.")
        if file_sha256(path) != expected:
            raise BackupError(
                f"The backup's {name} does not match its checksum; it was changed or damaged."
            )
    return manifest


def _refuse_inside_transaction() -> None:
    # SQLite's backup of a connection that holds the write lock waits for itself forever.
    if connection.in_atomic_block:
        raise BackupError("A backup or restore cannot run inside a database transaction.")


def tables_with_rows() -> list[str]:
    """The tables, beyond those migrating alone fills, that hold at least one row."""
    names = sorted(set(connection.introspection.table_names()) - SETUP_TABLES)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        filled = []
        for name in names:
            cursor.execute(f"SELECT 1 FROM {quote(name)} LIMIT 1")  # noqa: S608 - introspected names
            if cursor.fetchone():
                filled.append(name)
    return filled


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- the database --------------------------------------------------------------------------------


def _database_dump(destination: Path, progress: Progress) -> str:
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        target = sqlite3.connect(destination / SQLITE_FILE)
        try:
            connection.connection.backup(target, pages=1024, progress=_sqlite_progress(progress))
        finally:
            target.close()
        return SQLITE_FILE
    if connection.vendor == "postgresql":
        _postgres(
            "pg_dump", "--format=custom", "--no-owner", f"--file={destination / POSTGRES_FILE}"
        )
        return POSTGRES_FILE
    raise BackupError(f"Backups support SQLite and PostgreSQL, not {connection.vendor}.")


def _database_load(source: Path, progress: Progress) -> None:
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        backup = sqlite3.connect(source / SQLITE_FILE)
        try:
            backup.backup(connection.connection, pages=1024, progress=_sqlite_progress(progress))
        finally:
            backup.close()
        return
    # pg_restore works on its own connection: close ours so no open transaction holds a lock.
    connection.close()
    _postgres(
        "pg_restore",
        "--clean",
        "--if-exists",
        "--no-owner",
        "--single-transaction",
        str(source / POSTGRES_FILE),
    )


def _sqlite_progress(progress: Progress):
    def report(status, remaining, total):
        if total:
            progress(f"  {total - remaining} of {total} pages")

    return report


def _postgres(program: str, *arguments: str) -> None:
    """Run pg_dump or pg_restore against this site's database; the password goes through the
    environment, never the command line (where `ps` would show it)."""
    if shutil.which(program) is None:
        raise BackupError(f"{program} is not installed; install the PostgreSQL client tools.")
    database = connection.settings_dict
    options = [f"--dbname={database['NAME']}"]
    for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if database.get(key):
            options.append(f"{flag}={database[key]}")
    environment = os.environ | (
        {"PGPASSWORD": database["PASSWORD"]} if database.get("PASSWORD") else {}
    )
    finished = subprocess.run(  # noqa: S603 - fixed programs, arguments from the settings
        [program, *options, *arguments],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if finished.returncode != 0:
        raise BackupError(f"{program} failed: {finished.stderr.strip()[-2000:]}")


def _latest_migrations() -> dict[str, str]:
    latest: dict[str, str] = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        latest[app] = max(latest.get(app, ""), name)
    return latest


# --- DATA_DIR ----------------------------------------------------------------------------------


def _data_pack(target: Path) -> None:
    data_dir = Path(settings.DATA_DIR)
    with tarfile.open(target, "w:gz") as archive:
        for path in sorted(data_dir.rglob("*")):
            if path.is_file() and not _left_out(path.relative_to(data_dir)):
                archive.add(path, arcname=str(path.relative_to(data_dir)), recursive=False)


def _left_out(relative: Path) -> bool:
    database = Path(str(connection.settings_dict["NAME"]))
    data_dir = Path(settings.DATA_DIR)
    name = relative.name
    return (
        relative.parts[0] == "staticfiles"
        or (name.startswith("test-") and ".sqlite3" in name)  # the test runs' databases
        or (data_dir / relative).resolve() in {database.resolve(), *_sqlite_companions(database)}
    )


def _sqlite_companions(database: Path) -> set[Path]:
    return {
        database.with_name(database.name + suffix).resolve()
        for suffix in ("-wal", "-shm", "-journal")
    }


def _data_unpack(source: Path) -> None:
    data_dir = Path(settings.DATA_DIR)
    data_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source, "r:gz") as archive:
        # The "data" filter refuses absolute paths, links out of the folder and device files.
        archive.extractall(data_dir, filter="data")
