"""Settings from environment variables with safe defaults (see README, "Configuration")."""

import os
from pathlib import Path

from config import env, security

BASE_DIR = Path(__file__).resolve().parent.parent
ENV = env.SiteEnvironment(os.environ)

PRODUCTION = env.production_mode(ENV)
DATA_DIR = env.data_dir(ENV, BASE_DIR / "var")
SECRET_KEY = env.secret_key(ENV, production=PRODUCTION, key_file=DATA_DIR / "secret_key")
DEBUG = env.env_bool(ENV, "DEBUG", default=False)
ALLOWED_HOSTS = env.allowed_hosts(ENV, production=PRODUCTION)
CSRF_TRUSTED_ORIGINS = [o for o in ENV.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "accounts",
    "llm",  # model calls: providers, prices, named endpoints
    "jobs",  # job machinery: leases, the watch, queueing, heartbeats, cost limits
    "benchmark",
    "fidelity",  # the simulated patient's fidelity reviews
    "jury",
    "annotation",
    "alignment",
    "rubric_lab",
    "webhooks",  # researchers' URLs told of every job's end, above the apps with jobs
    "portal",  # the home page and manage.py demo, above every app
    "audit",
    "axes",
    # The JSON API (api/); "ninja" serves its docs page from the package's static files.
    "ninja",
    "api",
    # Its validator's messages (AUTH_PASSWORD_VALIDATORS below).
    "django_zxcvbn_password_validator",
    # Sign-on with the institution's OpenID Connect provider and two factors (below).
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.mfa",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.security.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "accounts.middleware.IdleTimeoutMiddleware",
    "accounts.two_factor.TwoFactorRequiredMiddleware",
    "config.security.NoStoreForLoggedInMiddleware",
    # One audit record per opening of a page that shows study data (audit/reads.py).
    "audit.reads.ReadAuditMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during login into the locked page.
    "axes.middleware.AxesMiddleware",
]

# --- Login throttling (django-axes) -------------------------------------------------------
# After AXES_FAILURE_LIMIT wrong passwords for one username from one address, that pair is
# locked for LOGIN_LOCKOUT_MINUTES: a guesser is slowed down, and a colleague on the same
# network keeps working. After LOGIN_ADDRESS_FAILURE_LIMIT wrong passwords from one address
# for any usernames within that window, the address is locked (accounts/lockout.py): one
# password tried on many usernames.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Logs in the people allauth signs on (the password form still goes through the two above).
    "allauth.account.auth_backends.AuthenticationBackend",
]
AXES_FAILURE_LIMIT = env.env_int(ENV, "LOGIN_FAILURE_LIMIT", 5)
LOGIN_ADDRESS_FAILURE_LIMIT = env.env_int(ENV, "LOGIN_ADDRESS_FAILURE_LIMIT", 20)
# A session ends after this long without a request (the review screen's heartbeat counts as a
# request while the page is visible): short for annotators on shared ward computers, a working
# morning for staff.
ANNOTATOR_IDLE_MINUTES = env.env_int(ENV, "ANNOTATOR_IDLE_MINUTES", 30)
STAFF_IDLE_MINUTES = env.env_int(ENV, "STAFF_IDLE_MINUTES", 120)
REVIEW_SAVE_TIMEOUT_SECONDS = env.env_int(ENV, "REVIEW_SAVE_TIMEOUT_SECONDS", 20)
# The review screen's pauses before it sends a failed autosave again (the last one repeats).
REVIEW_SAVE_RETRY_SECONDS = (2, 4, 8, 15, 30)
LOGIN_LOCKOUT_MINUTES = env.env_int(ENV, "LOGIN_LOCKOUT_MINUTES", 15)
AXES_COOLOFF_TIME = LOGIN_LOCKOUT_MINUTES / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "accounts.lockout.LoginThrottle"
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.navigation",
                "benchmark.context_processors.queue_health",
            ],
        },
    },
]

DATABASES = {"default": env.database_config(ENV, DATA_DIR / "db.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Every password set through Django (the admin's forms, the People page, createsuperuser, the
# demo people) is checked: not like the username or name, at least 12 characters, not a common
# password, not all digits, and hard to guess by zxcvbn's estimate (repeats, sequences, keyboard
# walks, dictionary words: "aaaaaaaaaaaa" is 12 characters and takes a handful of guesses).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "django_zxcvbn_password_validator.ZxcvbnPasswordValidator"},
]
# zxcvbn's score 3 of 4: about 10^10 guesses, safe against an offline attack on a slow hash.
PASSWORD_MINIMAL_STRENGTH = 3
# Words a password here should not lean on.
PASSWORD_EXTRA_DICTIONARY = ["carejury", "clinic", "patient"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# Outside production, serve static files straight from the source folders (no collectstatic).
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Every upload form refuses files above this size (common/uploads.py); a form post without a
# file (a pasted rubric or distribution) is limited the same way.
UPLOAD_LIMIT_MB = env.env_int(ENV, "UPLOAD_LIMIT_MB", 5)
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_LIMIT_MB * 1_000_000
# Study archives (alignment.services.archive) are far bigger than other uploads: their own
# limit for the upload, and for what the zip may unpack to (checked before extracting).
ARCHIVE_UPLOAD_LIMIT_MB = env.env_int(ENV, "ARCHIVE_UPLOAD_LIMIT_MB", 500)
ARCHIVE_UNPACKED_LIMIT_MB = env.env_int(ENV, "ARCHIVE_UNPACKED_LIMIT_MB", 5000)
# A finished export is offered for download this long, then deleted from DATA_DIR/archives
# (it holds every score and, when asked, usernames: no copy stays on the server for nothing).
ARCHIVE_DOWNLOAD_HOURS = env.env_int(ENV, "ARCHIVE_DOWNLOAD_HOURS", 24)
CONTENT_SECURITY_POLICY = security.content_security_policy(
    sign_on_origin=env.origin_of(ENV.get("SSO_ISSUER_URL", ""))
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    SESSION_COOKIE_SECURE = env.env_bool(ENV, "SECURE_COOKIES", default=True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    # HTTPS only, remembered by browsers; SECURE_SSL_REDIRECT=false when a proxy redirects.
    SECURE_SSL_REDIRECT = env.env_bool(ENV, "SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.env_int(ENV, "SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.env_bool(ENV, "SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env.env_bool(ENV, "SECURE_HSTS_PRELOAD", default=True)
if env.env_bool(ENV, "BEHIND_TLS_PROXY", default=False):
    # The proxy terminates TLS; trust its header so Django knows requests were HTTPS.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # ...and take the client address for login throttling from the header it adds.
    AXES_IPWARE_PROXY_COUNT = 1
    AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"]

# --- Sign-on and two factors (django-allauth; accounts/sso.py, accounts/two_factor.py) -------
# SSO_ISSUER_URL and its client turn on the sign-on button; SSO_ROLE_CLAIM maps a claim to the
# role, flags and projects (accounts/claims.py). docs/guides/admin/deployment.md sets it up.
SOCIALACCOUNT_PROVIDERS = env.sso_provider(ENV) or {}
SSO_ENABLED = bool(SOCIALACCOUNT_PROVIDERS)
SSO_CLIENT_SECRET = ENV.get("SSO_CLIENT_SECRET", "")  # redacted from every log line
SSO_CLAIMS = env.sso_claims(ENV)
SOCIALACCOUNT_ADAPTER = "accounts.sso.SignOnAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_LOGIN_ON_GET = False  # the sign-on button posts (no login started by a link)
SOCIALACCOUNT_ONLY = False
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_OPENID_CONNECT_URL_PREFIX = "oidc"
ACCOUNT_EMAIL_VERIFICATION = "none"  # the provider verifies addresses, the site sends no mail
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email"]
ACCOUNT_LOGOUT_REDIRECT_URL = LOGOUT_REDIRECT_URL
# Roles that may still log in with a password here; the others must sign on.
LOCAL_PASSWORD_ROLES = env.role_list(ENV, "LOCAL_PASSWORD_ROLES", env.ROLE_NAMES)
# Roles that must set up a second factor (an authenticator app's codes) before anything else:
# researchers and admins in production (they export data and launch paid runs).
TWO_FACTOR_REQUIRED_ROLES = env.role_list(
    ENV, "TWO_FACTOR_REQUIRED_ROLES", ("researcher", "admin") if PRODUCTION else ()
)
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = ENV.get("TWO_FACTOR_ISSUER", "CareJury")
MFA_RECOVERY_CODE_COUNT = 10
MFA_ADAPTER = "accounts.two_factor.TwoFactorAdapter"
# allauth would ask for the password again before a factor is set up or removed, but people who
# sign on have no password here and nothing else to re-prove: they would be stuck. The login
# itself is recent (the idle rules end old sessions) and the required roles cannot remove it.
MFA_REAUTHENTICATION_REQUIRED = False

# --- Task queue -------------------------------------------------------------------------
# With REDIS_URL, Celery talks to Redis and workers may run on any machine. Without it, the
# embedded default uses a folder on this machine as the queue: a worker process (started by
# `manage.py demo` or `manage.py worker`) picks tasks up, so long work still leaves the request.
REDIS_URL = env.redis_url(ENV)
CELERY_QUEUE_DIR = DATA_DIR / "queue"
globals().update(env.celery_transport(REDIS_URL, CELERY_QUEUE_DIR))
QUEUE_MODE = "redis" if REDIS_URL else "embedded"
CELERY_TASK_ACKS_LATE = True  # a worker crash mid-task hands the task to another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Nothing reads task results (progress lives in the database), and storing them would make
# every send and every finished task wait on Redis's retries while Redis is down.
CELERY_TASK_IGNORE_RESULT = True
# A worker waits out a Redis outage of any length and reconnects on its own; a task running
# when the connection dropped finishes (its result is in the database, its work leased).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A send to an unreachable Redis fails within a few seconds (then the work waits in the
# database, jobs/services/queue.py) instead of holding the page.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The embedded queue's worker keeps its countdowns in a timer thread that sleeps up to this
# long between looks, and a stopping worker waits for that sleep to end: 1 s by default, on
# every stop. (A Redis worker's timer lives in its event loop, without that thread.)
CELERY_WORKER_TIMER_PRECISION = 0.1
# Without this, Celery closes every database connection before and after every task: a new
# PostgreSQL connection per judge call doubled the database's CPU. Connections now live
# CONN_MAX_AGE and are health-checked before each task (config/celery.py); Celery still
# closes one after this many tasks of a worker process.
CELERY_DB_REUSE_MAX = env.env_int(ENV, "CELERY_DB_REUSE_MAX", 1000)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
CELERY_WORKER_CONCURRENCY = env.env_int(ENV, "WORKER_CONCURRENCY", 16)
# A conversation whose worker stopped sending heartbeats for this long is run again from its
# start (covers crashed workers and tasks lost with them).
CONVERSATION_LEASE_SECONDS = env.env_int(ENV, "CONVERSATION_LEASE_SECONDS", 900)
# A job waiting on provider batches is looked at this often (each look records their answers).
BATCH_POLL_SECONDS = env.env_int(ENV, "BATCH_POLL_SECONDS", 60)
# Every worker (and inline command) reports this often; job pages say no worker is reporting
# once none has for WORKER_SILENT_SECONDS (a busy SQLite can hold a write for 30 s).
WORKER_HEARTBEAT_SECONDS = env.env_int(ENV, "WORKER_HEARTBEAT_SECONDS", 15)
WORKER_SILENT_SECONDS = env.env_int(ENV, "WORKER_SILENT_SECONDS", 60)

# --- Email: notifications to annotators (annotation.services.notifications) ----------------
# Sent by the workers from the outbox, never in a request. Without EMAIL_HOST (the demo, a
# laptop) messages are printed by the console backend into the worker's log; with it, SMTP.
EMAIL_HOST = ENV.get("EMAIL_HOST", "")
EMAIL_BACKEND = ENV.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_FILE_PATH = ENV.get("EMAIL_FILE_PATH", str(DATA_DIR / "mail"))  # the file backend's folder
EMAIL_PORT = env.env_int(ENV, "EMAIL_PORT", 587)
EMAIL_HOST_USER = ENV.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = ENV.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.env_bool(ENV, "EMAIL_USE_TLS", default=True)
EMAIL_USE_SSL = env.env_bool(ENV, "EMAIL_USE_SSL", default=False)
if EMAIL_USE_SSL:
    EMAIL_USE_TLS = False  # Django refuses both; implicit TLS (port 465) replaces STARTTLS
EMAIL_TIMEOUT = env.env_int(ENV, "EMAIL_TIMEOUT", 20)
DEFAULT_FROM_EMAIL = ENV.get("DEFAULT_FROM_EMAIL", "CareJury <noreply@localhost>")
# The site's address as people reach it, for the links in notifications.
SITE_URL = ENV.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# How often every worker looks for notifications to send (retries, deadline reminders).
NOTIFICATION_TICK_SECONDS = env.env_int(ENV, "NOTIFICATION_TICK_SECONDS", 60)

# --- Webhooks: every job's end, signed and sent to researchers' URLs by the workers ----------
# A failed attempt is tried again after WEBHOOK_BACKOFF_SECONDS, then twice as long each time
# up to WEBHOOK_BACKOFF_MAX_SECONDS, WEBHOOK_MAX_ATTEMPTS attempts in all; a hook whose
# deliveries failed WEBHOOK_DISABLE_AFTER times in a row is turned off.
WEBHOOK_BACKOFF_SECONDS = env.env_float(ENV, "WEBHOOK_BACKOFF_SECONDS", 30.0)
WEBHOOK_BACKOFF_MAX_SECONDS = env.env_float(ENV, "WEBHOOK_BACKOFF_MAX_SECONDS", 3600.0)
WEBHOOK_MAX_ATTEMPTS = env.env_int(ENV, "WEBHOOK_MAX_ATTEMPTS", 8)
WEBHOOK_DISABLE_AFTER = env.env_int(ENV, "WEBHOOK_DISABLE_AFTER", 5)
WEBHOOK_TIMEOUT_SECONDS = env.env_float(ENV, "WEBHOOK_TIMEOUT_SECONDS", 10.0)
# Webhooks to loopback, private, link-local and metadata addresses are refused (a researcher
# must not reach the site's own network through the workers) unless this is on: a lab whose
# receivers are on its private network, the tests and the demo.
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env.env_bool(ENV, "WEBHOOK_ALLOW_PRIVATE_ADDRESSES", False)
# How often every worker looks for deliveries that are due (retries whose task was lost).
WEBHOOK_TICK_SECONDS = env.env_int(ENV, "WEBHOOK_TICK_SECONDS", 30)

# --- Caches: the model-response cache must be shared by every worker ---------------------
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "llm": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "TIMEOUT": None,
            # An unreachable Redis is a cache miss within seconds, never a hung worker.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 10},
        }
        if REDIS_URL
        else {
            # Django's file cache, but not listing its folder on every write (config/file_caches).
            "BACKEND": "config.file_caches.SparselyCulledFileCache",
            "LOCATION": str(DATA_DIR / "llm-cache"),
            "TIMEOUT": None,
            "OPTIONS": {"MAX_ENTRIES": 1_000_000},
        }
    ),
}

# --- Model providers: keys and URLs only from the environment, never stored ---------------
OPENAI_API_KEY = ENV.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = ENV.get("OPENAI_BASE_URL", "")
ANTHROPIC_API_KEY = ENV.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = ENV.get("ANTHROPIC_BASE_URL", "")
OPENAI_COMPATIBLE_BASE_URL = ENV.get("OPENAI_COMPATIBLE_BASE_URL", "")
OPENAI_COMPATIBLE_API_KEY = ENV.get("OPENAI_COMPATIBLE_API_KEY", "")
LLM_TIMEOUT_SECONDS = env.env_int(ENV, "LLM_TIMEOUT_SECONDS", 120)
LLM_MAX_RETRIES = env.env_int(ENV, "LLM_MAX_RETRIES", 6)
# Load tests and crash rehearsals: make every offline scripted answer take this long.
OFFLINE_LATENCY_MS = env.env_int(ENV, "OFFLINE_LATENCY_MS", 0)

# Every record of every logger is redacted where it is made: no key reaches the log.
LOGGING_CONFIG = "llm.redaction.configure_logging"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": ENV.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Lockouts are warnings; the INFO lines django-axes writes on every login are noise.
        "axes": {"level": "WARNING"},
        # The model SDKs' HTTP clients log every request at INFO: one line per model call in
        # the workers' logs, redacted and written (failures are logged by the platform). Older
        # SDKs in the pinned range use httpx; the current openai and anthropic SDKs use httpx2
        # (tests/foundation/test_settings.py checks each name is an installed library).
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# --- The JSON API (api/): personal access tokens -------------------------------------------
# Requests a new token may make per minute (each token keeps its own count). The counts live in
# a cache every web process shares (Redis, or files in DATA_DIR), so the limit holds across
# gunicorn workers.
API_TOKEN_REQUESTS_PER_MINUTE = env.env_int(ENV, "API_TOKEN_REQUESTS_PER_MINUTE", 120)
# Refused tokens one client address may present per minute before it gets 429 unlooked-up.
API_TOKEN_FAILURES_PER_MINUTE = env.env_int(ENV, "API_TOKEN_FAILURES_PER_MINUTE", 10)
# Counts are added to atomically: Redis INCR, or the file cache's add and incr under a lock.
CACHES["api"] = (
    {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
    }
    if REDIS_URL
    else {
        "BACKEND": "config.file_caches.LockedFileBasedCache",
        "LOCATION": str(DATA_DIR / "api-rate"),
        # Culling at Django's default 300 entries would drop live counts at random.
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }
)

# Every variable read above is the site's own: a named model endpoint may never take its key
# from one of them (llm/engine/providers/endpoints.py), or an admin could send the
# signing key or the database password to an address of their choosing. Keep this line last.
SITE_VARIABLES = frozenset(ENV.names_read)
