"""Read configuration from environment variables, failing with a message that names the setting.

Kept apart from settings.py so every rule is testable on its own.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}
REDIS_SCHEMES = {"redis", "rediss", "unix"}


class SettingsError(ImproperlyConfigured):
    """A configuration problem a person can fix; printed without a traceback."""


class SiteEnvironment(Mapping):
    """The process environment as the settings read it, remembering the name of each variable
    read: those are the site's own (its signing key, database, mail password, provider keys),
    so none of them may be named as a model endpoint's key, which is sent to the endpoint."""

    def __init__(self, environ: Mapping[str, str]):
        self._environ = environ
        self.names_read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.names_read.add(name)
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def env_bool(environ: dict, name: str, default: bool = False) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise SettingsError(f"{name}={raw!r} is not a yes/no value (use 1/0, true/false).")


def env_int(environ: dict, name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number.") from None


def env_float(environ: dict, name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number.") from None


def data_dir(environ: dict, default: Path) -> Path:
    """The folder for the SQLite file, the generated secret key and the embedded queue."""
    path = Path(environ.get("DATA_DIR") or default).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        # A probe of its own: processes starting together (several workers) each write one.
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as error:
        raise SettingsError(
            f"DATA_DIR {str(path)!r} is not writable ({error.strerror}); "
            "set DATA_DIR to a folder this user can write."
        ) from None
    return path


def database_config(environ: dict, default_sqlite: Path) -> dict:
    import dj_database_url

    url = environ.get("DATABASE_URL", "").strip()
    if not url:
        return sqlite_config(default_sqlite)
    scheme = urlparse(url).scheme
    if scheme not in {"sqlite", "postgres", "postgresql", "pgsql", "postgis"}:
        raise SettingsError(
            f"DATABASE_URL has scheme {scheme!r}; use postgres://user:pass@host:5432/name "
            "or sqlite:////absolute/path.sqlite3."
        )
    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except Exception as error:  # the library raises several types for malformed URLs
        raise SettingsError(f"DATABASE_URL could not be parsed: {error}") from None
    if config["ENGINE"].endswith("sqlite3"):
        return sqlite_config(Path(config["NAME"]))
    if not config.get("NAME"):
        raise SettingsError("DATABASE_URL names no database (add /dbname at the end).")
    return config


def sqlite_config(path: Path) -> dict:
    # WAL lets the web process read while a worker writes; IMMEDIATE transactions avoid the
    # "database is locked" upgrade deadlock between concurrent writers.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        # Keep connections across Celery tasks: reopening runs the PRAGMAs again each time.
        "CONN_MAX_AGE": 600,
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;"
            ),
        },
        # A file (not memory) so worker processes and the live server share it; one per test
        # process so parallel test runs never share one.
        "TEST": {"NAME": str(path.with_name(f"test-{os.getpid()}-{path.name}"))},
    }


def redis_url(environ: dict) -> str | None:
    url = environ.get("REDIS_URL", "").strip()
    if not url:
        return None
    parsed = urlparse(url)
    if parsed.scheme not in REDIS_SCHEMES:
        raise SettingsError(
            f"REDIS_URL has scheme {parsed.scheme!r}; expected redis://host:6379/0."
        )
    if parsed.scheme != "unix" and not parsed.hostname:
        raise SettingsError("REDIS_URL names no host; expected redis://host:6379/0.")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise SettingsError(f"REDIS_URL has a malformed port: {url!r}.") from None
    return url


def secret_key(environ: dict, *, production: bool, key_file: Path) -> str:
    key = environ.get("SECRET_KEY", "").strip()
    if key:
        return key
    if production:
        raise SettingsError(
            "SECRET_KEY must be set in production (APP_ENV=production). "
            "Generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    if not key_file.exists():
        write_new_secret_key(key_file)
    key = key_file.read_text().strip()
    if not key:
        raise SettingsError(
            f"The secret key file {key_file} is empty (a disk that was full when it was "
            "written?); delete it and a new key is made at the next start, or set SECRET_KEY."
        )
    return key


def write_new_secret_key(key_file: Path) -> None:
    """Write a new key whole or not at all: written and flushed to a temporary file in the same
    folder, then linked into place. A full disk leaves no empty key behind, and of processes
    starting together the first to link wins and all read its key."""
    temporary = None
    try:
        with tempfile.NamedTemporaryFile(  # created readable by this user only (0600)
            "w", dir=key_file.parent, prefix=".secret_key-", delete=False
        ) as file:
            temporary = Path(file.name)
            file.write(secrets.token_urlsafe(50))
            file.flush()
            os.fsync(file.fileno())
        # Another process starting at the same time may have linked its key first: use that.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, key_file)
    except OSError as error:
        raise SettingsError(
            f"The secret key could not be written to {key_file} ({error.strerror}); "
            "free space in DATA_DIR and start again, or set SECRET_KEY."
        ) from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def production_mode(environ: dict) -> bool:
    mode = environ.get("APP_ENV", "development").strip().lower()
    if mode not in {"development", "production"}:
        raise SettingsError(f"APP_ENV={mode!r}; use development or production.")
    return mode == "production"


def allowed_hosts(environ: dict, *, production: bool) -> list[str]:
    raw = environ.get("ALLOWED_HOSTS", "")
    hosts = [host.strip() for host in raw.split(",") if host.strip()]
    if production and not hosts:
        raise SettingsError("ALLOWED_HOSTS must be set in production (comma-separated).")
    return hosts or ["localhost", "127.0.0.1", "[::1]", "testserver"]


def celery_transport(redis: str | None, queue_dir: Path) -> dict:
    """Broker and result settings (CELERY_* names) for Redis or the embedded folder queue."""
    if redis:
        return {
            "CELERY_BROKER_URL": redis,
            "CELERY_RESULT_BACKEND": redis,
            "CELERY_BROKER_TRANSPORT_OPTIONS": {"visibility_timeout": 3600},
        }
    for sub in ("in", "processed", "bad", "results", "control"):
        (queue_dir / sub).mkdir(parents=True, exist_ok=True)
    return {
        "CELERY_BROKER_URL": "filesystem://localhost//",
        "CELERY_RESULT_BACKEND": f"file://{queue_dir / 'results'}",
        "CELERY_BROKER_TRANSPORT_OPTIONS": {
            "data_folder_in": str(queue_dir / "in"),
            "data_folder_out": str(queue_dir / "in"),
            "processed_folder": str(queue_dir / "processed"),
            # Files that hold no message are moved here (config/folder_transport.py).
            "bad_folder": str(queue_dir / "bad"),
            "control_folder": str(queue_dir / "control"),
            "store_processed": False,
            "polling_interval": 0.2,
        },
    }


# --- Sign-on (OpenID Connect) and two factors ----------------------------------------------
ROLE_NAMES = ("annotator", "researcher", "admin")
TOKEN_AUTH_METHODS = ("client_secret_basic", "client_secret_post")
# The role values a claim (and SSO_DEFAULT_ROLE) may hold: an annotator needs a track.
SSO_ROLE_VALUES = ("admin", "researcher", "annotator-clinical", "annotator-operational")
SSO_PROVIDER_ID = "sso"  # its addresses: /accounts/oidc/sso/login/ and .../login/callback/


def role_list(environ: dict, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list of roles ("" for none), each checked against the site's roles."""
    raw = environ.get(name)
    if raw is None:
        return default
    roles = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    unknown = sorted(set(roles) - set(ROLE_NAMES))
    if unknown:
        raise SettingsError(
            f"{name} names unknown roles {', '.join(unknown)}; use any of {', '.join(ROLE_NAMES)}."
        )
    return roles


def sso_provider(environ: dict) -> dict | None:
    """django-allauth's settings for the institution's OpenID Connect provider, or None when
    SSO_ISSUER_URL is not set (local passwords only)."""
    issuer = environ.get("SSO_ISSUER_URL", "").strip()
    if not issuer:
        return None
    if urlparse(issuer).scheme not in {"http", "https"} or not urlparse(issuer).hostname:
        raise SettingsError(
            f"SSO_ISSUER_URL={issuer!r} is not an address; give the provider's issuer, e.g. "
            "https://login.example.org/realms/hospital."
        )
    client_id = environ.get("SSO_CLIENT_ID", "").strip()
    secret = environ.get("SSO_CLIENT_SECRET", "").strip()
    if not client_id or not secret:
        raise SettingsError(
            "SSO_ISSUER_URL is set: SSO_CLIENT_ID and SSO_CLIENT_SECRET must be set too."
        )
    method = environ.get("SSO_TOKEN_AUTH_METHOD", "client_secret_basic").strip()
    if method not in TOKEN_AUTH_METHODS:
        raise SettingsError(
            f"SSO_TOKEN_AUTH_METHOD={method!r}; use {' or '.join(TOKEN_AUTH_METHODS)}."
        )
    app = {
        "provider_id": SSO_PROVIDER_ID,
        "name": environ.get("SSO_NAME", "").strip() or "your institution's sign-in",
        "client_id": client_id,
        "secret": secret,
        "settings": {
            # allauth appends /.well-known/openid-configuration unless the address has it.
            "server_url": issuer.rstrip("/"),
            "token_auth_method": method,
            "oauth_pkce_enabled": True,
            # Entra ID's userinfo lacks the app roles its ID token carries.
            "fetch_userinfo": env_bool(environ, "SSO_USERINFO", default=True),
            # Scopes beyond these when the provider puts the role claim behind one of its own.
            "scope": environ.get("SSO_SCOPES", "openid profile email").split(),
        },
    }
    return {"openid_connect": {"APPS": [app], "OAUTH_PKCE_ENABLED": True}}


def origin_of(url: str) -> str:
    """scheme://host[:port] of an address ("" for none)."""
    parts = urlparse(url.strip())
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def sso_claims(environ: dict) -> dict:
    """Which claim carries a person's role, flags and projects, and how its values read."""
    default_role = environ.get("SSO_DEFAULT_ROLE", "annotator-clinical").strip().lower()
    if default_role and default_role not in SSO_ROLE_VALUES:
        raise SettingsError(
            f"SSO_DEFAULT_ROLE={default_role!r}; use one of {', '.join(SSO_ROLE_VALUES)}, or "
            "leave it empty to refuse new people the claim gives no role."
        )
    return {
        "claim": environ.get("SSO_ROLE_CLAIM", "").strip(),
        "prefix": environ.get("SSO_CLAIM_PREFIX", "").strip(),
        "default_role": default_role,
        # Every address the provider sends counts as verified (it owns them but does not say).
        "trust_email": env_bool(environ, "SSO_TRUST_EMAIL", default=False),
    }
