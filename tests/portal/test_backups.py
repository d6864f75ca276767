"""`manage.py backup` and `restore`: a round trip leaves every table of a study's report as it
was, DATA_DIR's files come back, and a damaged backup or a database in use is refused."""

import json
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection

from alignment.services.archive import study_tables
from annotation.models import Assignment
from audit.services import audit_chain_break
from portal.services.backups import (
    DATA_FILE,
    MANIFEST,
    SQLITE_FILE,
    BackupError,
    backup_check,
    backup_write,
)
from tests.alignment.conftest import annotated_study, people  # noqa: F401 - fixtures
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path / "data"
    (settings.DATA_DIR / "archives").mkdir(parents=True)
    (settings.DATA_DIR / "archives" / "export.zip").write_bytes(b"an export")
    (settings.DATA_DIR / "staticfiles").mkdir()
    (settings.DATA_DIR / "staticfiles" / "site.css").write_text("rebuilt by collectstatic")
    return settings.DATA_DIR


def tables_now(study) -> dict[str, str]:
    cache.clear()  # figures computed from the rows, not remembered
    return study_tables(study)


@pytest.mark.django_db(transaction=True)
def test_a_round_trip_leaves_every_figure_of_a_study_identical(
    annotated_study,  # noqa: F811 - the imported fixture
    data_dir,
    tmp_path,
):
    before = tables_now(annotated_study)
    call_command("backup", str(tmp_path / "backup"), stdout=StringIO())
    with pytest.raises(CommandError, match="already holds data"):
        call_command("restore", str(tmp_path / "backup"))
    Assignment.objects.filter(item__study=annotated_study).update(scores={})
    (data_dir / "archives" / "export.zip").unlink()
    assert tables_now(annotated_study) != before

    call_command("restore", str(tmp_path / "backup"), "--force", stdout=StringIO())
    assert tables_now(annotated_study) == before
    assert (data_dir / "archives" / "export.zip").read_bytes() == b"an export"
    assert audit_chain_break() is None


@pytest.mark.django_db(transaction=True)
def test_the_backup_leaves_out_static_files_and_the_database_file(data_dir, tmp_path):
    import tarfile

    call_command("backup", str(tmp_path / "backup"), stdout=StringIO())
    with tarfile.open(tmp_path / "backup" / DATA_FILE) as archive:
        assert archive.getnames() == ["archives/export.zip"]
    manifest = json.loads((tmp_path / "backup" / MANIFEST).read_text())
    assert manifest["engine"] == connection.vendor and set(manifest["files"]) >= {DATA_FILE}
    assert "audit" in manifest["migrations"]


@pytest.mark.django_db
def test_a_backup_inside_a_transaction_is_refused_rather_than_waiting_for_itself(tmp_path):
    with pytest.raises(BackupError, match="inside a database transaction"):
        backup_write(tmp_path / "backup")


@pytest.mark.django_db(transaction=True)
def test_a_backup_into_a_folder_in_use_is_refused(data_dir, tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", str(tmp_path / "used"))


def test_a_changed_file_is_refused_by_its_checksum(tmp_path):
    (tmp_path / SQLITE_FILE).write_bytes(b"changed")
    (tmp_path / DATA_FILE).write_bytes(b"")
    manifest = {"format": "carejury-backup/1", "files": {SQLITE_FILE: "0" * 64}}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BackupError, match=f"{SQLITE_FILE} does not match its checksum"):
        backup_check(tmp_path)


def test_a_folder_without_a_manifest_is_not_a_backup(tmp_path):
    with pytest.raises(BackupError, match="not a backup folder"):
        backup_check(tmp_path)
