"""Configuration is read from the environment and bad values name the setting."""

import errno
import os
import resource
import signal
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path

import pytest

from config import env
from tests.support.workers import start_python

ROOT = Path(__file__).resolve().parents[2]


def test_it_defaults_to_sqlite_with_wal(tmp_path):
    config = env.database_config({}, tmp_path / "db.sqlite3")
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert "journal_mode=WAL" in config["OPTIONS"]["init_command"]


def test_it_parses_a_postgres_url(tmp_path):
    config = env.database_config(
        {"DATABASE_URL": "postgres://bench:secret@db.local:5433/evals"}, tmp_path / "x"
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["HOST"], config["PORT"]) == ("evals", "db.local", 5433)


def test_it_parses_a_sqlite_url_and_keeps_wal(tmp_path):
    config = env.database_config({"DATABASE_URL": f"sqlite:///{tmp_path}/other.db"}, tmp_path)
    assert config["NAME"].endswith("other.db")
    assert "WAL" in config["OPTIONS"]["init_command"]


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("mysql://u:p@h/db", "scheme 'mysql'"),
        ("not a url", "DATABASE_URL"),
        ("postgres://u:p@host:5432", "names no database"),
    ],
)
def test_it_rejects_malformed_database_urls(tmp_path, url, fragment):
    with pytest.raises(env.SettingsError, match="DATABASE_URL|database") as caught:
        env.database_config({"DATABASE_URL": url}, tmp_path)
    assert fragment in str(caught.value)


def test_it_reads_redis_url():
    assert env.redis_url({"REDIS_URL": "redis://localhost:6379/1"}) == "redis://localhost:6379/1"
    assert env.redis_url({}) is None


@pytest.mark.parametrize("url", ["http://localhost:6379", "redis://", "redis://host:notaport/0"])
def test_it_rejects_malformed_redis_urls(url):
    with pytest.raises(env.SettingsError, match="REDIS_URL"):
        env.redis_url({"REDIS_URL": url})


def test_redis_settings_switch_celery_to_redis(tmp_path):
    config = env.celery_transport("redis://h:6379/0", tmp_path)
    assert config["CELERY_BROKER_URL"] == "redis://h:6379/0"


def test_embedded_queue_uses_a_local_folder(tmp_path):
    config = env.celery_transport(None, tmp_path / "queue")
    assert config["CELERY_BROKER_URL"].startswith("filesystem://")
    assert (tmp_path / "queue" / "in").is_dir()


def test_production_requires_a_secret_key(tmp_path):
    with pytest.raises(env.SettingsError, match="SECRET_KEY must be set in production"):
        env.secret_key({}, production=True, key_file=tmp_path / "k")


def test_development_generates_and_keeps_a_secret_key(tmp_path):
    first = env.secret_key({}, production=False, key_file=tmp_path / "k")
    second = env.secret_key({}, production=False, key_file=tmp_path / "k")
    assert first == second and len(first) > 40
    assert stat.S_IMODE(os.stat(tmp_path / "k").st_mode) == 0o600


def test_an_empty_secret_key_file_is_refused_naming_the_file(tmp_path):
    (tmp_path / "secret_key").write_text("  \n")
    with pytest.raises(env.SettingsError, match="secret key file .*secret_key is empty"):
        env.secret_key({}, production=False, key_file=tmp_path / "secret_key")


def test_a_full_disk_leaves_no_key_file_behind(tmp_path, monkeypatch):
    def disk_full(_descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    key_file = tmp_path / "secret_key"
    with monkeypatch.context() as patch:
        patch.setattr(env.os, "fsync", disk_full)
        with pytest.raises(env.SettingsError, match="could not be written to .*secret_key"):
            env.secret_key({}, production=False, key_file=key_file)
    assert list(tmp_path.iterdir()) == []
    # Space freed: the next start makes and keeps a key.
    assert env.secret_key({}, production=False, key_file=key_file) == key_file.read_text()


def test_processes_starting_together_all_keep_the_same_secret_key(tmp_path):
    key_file = tmp_path / "secret_key"
    with ThreadPoolExecutor(max_workers=6) as pool:
        keys = set(
            pool.map(lambda _: env.secret_key({}, production=False, key_file=key_file), range(6))
        )
    assert keys == {key_file.read_text()}


def limit_file_size() -> None:
    """Run in the child: any write past a few bytes fails, as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8, 8))


def test_manage_on_a_full_disk_names_the_key_file_and_works_once_space_is_freed(tmp_path):
    full = run_manage(tmp_path, preexec_fn=limit_file_size)
    assert full.returncode == 2, full.stderr
    assert full.stderr.startswith("Configuration error: The secret key could not be written")
    assert "Traceback" not in full.stderr
    assert not (tmp_path / "secret_key").exists()
    assert run_manage(tmp_path).returncode == 0


def test_production_requires_allowed_hosts():
    with pytest.raises(env.SettingsError, match="ALLOWED_HOSTS"):
        env.allowed_hosts({}, production=True)


def test_it_rejects_a_non_boolean_debug():
    with pytest.raises(env.SettingsError, match="DEBUG"):
        env.env_bool({"DEBUG": "maybe"}, "DEBUG")


def test_debug_is_off_unless_asked():
    assert env.env_bool({}, "DEBUG") is False


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_it_rejects_an_unwritable_data_dir_as_user(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(env.SettingsError, match="DATA_DIR"):
        env.data_dir({"DATA_DIR": str(locked / "sub")}, tmp_path)


def test_it_rejects_a_data_dir_that_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(env.SettingsError, match="DATA_DIR .* is not writable"):
        env.data_dir({"DATA_DIR": str(blocker / "sub")}, tmp_path)


def test_processes_starting_together_all_accept_the_same_data_dir(tmp_path):
    """Several workers start at once on one DATA_DIR (the rehearsal starts three): each checks
    that it may write there, and none may take another's check for a failure."""

    def check(_) -> str:
        try:
            for _ in range(200):
                env.data_dir({"DATA_DIR": str(tmp_path)}, tmp_path)
        except env.SettingsError as error:
            return str(error)
        return ""

    with ThreadPoolExecutor(max_workers=6) as pool:
        assert not [error for error in pool.map(check, range(6)) if error]


def forked_manage(environment: dict, *arguments: str, output: Path) -> subprocess.CompletedProcess:
    """`manage.py *arguments` forked as the tests' workers are (tests/support/worker_forks.py):
    the project and its settings load from scratch in the fork, the libraries are imported
    already. Its output and errors are kept apart, in files under `output`."""
    output.mkdir(exist_ok=True)
    out, err = output / f"{arguments[0]}.out", output / f"{arguments[0]}.err"
    process = start_python(["manage.py", *arguments], environment, out, err)
    process.wait(timeout=300)  # Django starting on a busy machine
    return subprocess.CompletedProcess(
        arguments, process.returncode, out.read_text(), err.read_text()
    )


def run_manage(tmp_path, preexec_fn=None, **overrides) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    environment.update({"DATA_DIR": str(tmp_path), **overrides})
    if preexec_fn is None:
        return forked_manage(environment, "check", output=tmp_path / "output")
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,  # Django starting on a busy machine
        preexec_fn=preexec_fn,
    )


@pytest.mark.parametrize(
    "overrides, setting",
    [
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
        ({"REDIS_URL": "http://x"}, "REDIS_URL"),
        ({"APP_ENV": "production"}, "SECRET_KEY"),
    ],
)
def test_manage_prints_one_clear_line_instead_of_a_traceback(tmp_path, overrides, setting):
    result = run_manage(tmp_path, **overrides)
    assert result.returncode == 2
    assert result.stderr.startswith("Configuration error:")
    assert setting in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_redis_is_reported_by_the_system_check(tmp_path):
    result = run_manage(tmp_path, REDIS_URL="redis://127.0.0.1:1/0")
    assert result.returncode != 0
    assert "REDIS_URL=redis://127.0.0.1:1/0 is set but Redis cannot be reached" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_without_collected_static_files_fails_the_check(tmp_path):
    result = run_manage(
        tmp_path, APP_ENV="production", SECRET_KEY="x" * 50, ALLOWED_HOSTS="example.org"
    )
    assert result.returncode != 0
    assert "collectstatic" in result.stderr


def test_the_deploy_check_is_clean_in_production_mode(tmp_path):
    production = {
        "APP_ENV": "production",
        "SECRET_KEY": "k3y-" + "".join(chr(97 + (i * 7) % 26) for i in range(60)),
        "ALLOWED_HOSTS": "lab.example.org",
    }
    # Nor the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE, which the deploy check warns about.
    unwanted = {"DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    environment = {k: v for k, v in os.environ.items() if k not in unwanted}
    environment.update({"DATA_DIR": str(tmp_path), **production})
    output = tmp_path / "output"
    # Production's storage and manifest, without the compressed copies: they took most of the
    # test's time, and the check below needs the manifest only (see static_uncompressed.py).
    collect = ["--noinput", "-v0", "--settings", "tests.support.static_uncompressed"]
    collected = forked_manage(environment, "collectstatic", *collect, output=output)
    assert collected.returncode == 0, collected.stderr
    result = forked_manage(environment, "check", "--deploy", "--fail-level", "WARNING",
                           output=output)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_every_page_carries_a_script_policy_without_inline_code(client, db):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    assert "unsafe-eval" not in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "camera=()" in response["Permissions-Policy"]


def test_no_template_holds_inline_script_or_event_handler_code():
    """The policy above would block them in the browser; catch them before a user does."""
    import re

    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+\s*=|\bhx-on[:-]", re.IGNORECASE)
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in (ROOT / "templates").rglob("*.html")
        for match in inline.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_every_logger_the_settings_quiet_belongs_to_an_installed_library(settings):
    """A logger name nothing logs to is a setting that does nothing (a typo, or a library gone)."""
    quieted = settings.LOGGING["loggers"]
    assert [name for name in quieted if find_spec(name.split(".")[0]) is None] == []
