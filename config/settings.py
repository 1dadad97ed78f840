"""Django settings for Transcripts."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.database import database_url, parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


DEBUG = _env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-do-not-use-in-production"
_hosts = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
ALLOWED_HOSTS = [h.strip() for h in _hosts.split(",") if h.strip()]
if DEBUG:
    ALLOWED_HOSTS.append("testserver")
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

# Production safety. TRANSCRIPTS_HTTPS (on by default when DEBUG is off) says browsers reach the
# site over HTTPS: SSL redirect, HSTS and Secure cookies. TRANSCRIPTS_HTTPS=0 declares a
# plain-HTTP deployment (a laptop, a private network, a test run) and turns only those off.
TRANSCRIPTS_HTTPS = _env_bool("TRANSCRIPTS_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = TRANSCRIPTS_HTTPS
SECURE_HSTS_SECONDS = (
    int(os.environ.get("TRANSCRIPTS_HSTS_SECONDS", "31536000")) if TRANSCRIPTS_HTTPS else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("TRANSCRIPTS_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = _env_bool("TRANSCRIPTS_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = TRANSCRIPTS_HTTPS
CSRF_COOKIE_SECURE = TRANSCRIPTS_HTTPS
SESSION_COOKIE_HTTPONLY = True
# Forms carry the token in a hidden field and no script reads the cookie.
CSRF_COOKIE_HTTPONLY = True
# Behind a TLS-terminating proxy: the header it sets to "https" (e.g. X-Forwarded-Proto). Only
# trust it when the proxy overwrites that header on every request.
_proxy_ssl_header = os.environ.get("TRANSCRIPTS_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
# Asking to be preloaded into browsers' HSTS lists binds the whole domain: its owner opts in.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
# Hosts whose images a reader may load into a transcript with its "Load image" button
# (comma-separated, `host` or `host:port`); any other host's image is only a link.
_IMAGE_HOST = re.compile(r"(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")
TRANSCRIPTS_IMAGE_HOSTS = [
    h.strip().lower() for h in os.environ.get("TRANSCRIPTS_IMAGE_HOSTS", "").split(",") if h.strip()
]
for _host in TRANSCRIPTS_IMAGE_HOSTS:
    if not _IMAGE_HOST.fullmatch(_host):
        raise ImproperlyConfigured(f"TRANSCRIPTS_IMAGE_HOSTS: {_host!r} is not host or host:port.")
# The Content-Security-Policy of every response when DEBUG is off (config/csp.py sends it):
# scripts and styles only from this site's files, no inline script or style attribute, no eval.
TRANSCRIPTS_CSP = (
    ""
    if DEBUG
    else "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            # Inline (data:) images, and remote ones only from the listed hosts: no image
            # planted in a transcript tells its host who read it.
            " ".join(("img-src 'self' data: blob:", *TRANSCRIPTS_IMAGE_HOSTS)),
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )
)

INSTALLED_APPS = [
    "transcripts.apps.TranscriptsAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "django_tasks",
    "django_tasks_db",
    "axes",
    "transcripts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.csp.content_security_policy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "transcripts.outage.OutageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: the lockout page of a login locked after too many failures
    # (docs/access.md).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
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
                "transcripts.web.context.header",
            ],
        },
    },
]

# An empty database is built from a cached snapshot of the migrated one instead of by every
# migration in turn (transcripts/management/schema_cache.py): on by default for the embedded
# clusters (development and tests, no DATABASE_URL), TRANSCRIPTS_SCHEMA_CACHE=1/0 to choose.
TRANSCRIPTS_SCHEMA_CACHE = _env_bool(
    "TRANSCRIPTS_SCHEMA_CACHE", not os.environ.get("DATABASE_URL", "").strip()
)
_EMBEDDED_DEV_CLUSTER = not os.environ.get("DATABASE_URL", "").strip() and not os.environ.get(
    "PYTEST_VERSION"
)
DATABASES = {"default": parse_database_url(database_url(BASE_DIR))}
if _EMBEDDED_DEV_CLUSTER:
    # A new cluster starts on a thread while Django loads; the first connection waits for it.
    DATABASES["default"]["ENGINE"] = "config.embedded_backend"
# While the database is down, requests fail fast and answer 503 (transcripts/outage.py): libpq
# stops connecting after TRANSCRIPTS_DB_CONNECT_TIMEOUT seconds (2 at least), and a request
# waits at most TRANSCRIPTS_DB_POOL_TIMEOUT seconds for a pooled connection.
DATABASES["default"]["OPTIONS"].setdefault(
    "connect_timeout", int(os.environ.get("TRANSCRIPTS_DB_CONNECT_TIMEOUT", "2"))
)
# A connection pool per process (psycopg_pool): each request borrows a connection instead of
# opening one (TRANSCRIPTS_DB_POOL_SIZE at most; a request that finds none free within
# TRANSCRIPTS_DB_POOL_TIMEOUT seconds is answered 503 `busy`). Off under pytest, whose test
# database is created after the settings load.
if _env_bool("TRANSCRIPTS_DB_POOL", not os.environ.get("PYTEST_VERSION")):
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": int(os.environ.get("TRANSCRIPTS_DB_POOL_SIZE", "8")),
        "timeout": float(os.environ.get("TRANSCRIPTS_DB_POOL_TIMEOUT", "1")),
        # The pool retries a lost server with a doubling pause (1, 2, 4 … s); giving up after
        # 3 s lets the next request try at once, so service resumes within a second or two
        # of the database's return instead of up to a minute later.
        "reconnect_timeout": 3.0,
    }
    # The pool checks a connection before handing it out (one empty round trip), so the
    # connections a database restart cut are replaced instead of failing the next requests.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Live streams (docs/scaling.md#live-streams): a web process listens on one connection for all
# its streams and reads for them on a pool of its own, TRANSCRIPTS_STREAM_READ_CONNECTIONS
# connections (a read waits TRANSCRIPTS_STREAM_READ_TIMEOUT seconds for one); a waiting
# stream holds no connection. A process holds TRANSCRIPTS_STREAMS_MAX run streams at most (the
# next is answered 503 busy); a stream more than TRANSCRIPTS_STREAM_QUEUE_SIZE notifications
# behind (a client too slow to read) is ended with a retry hint. TRANSCRIPTS_STREAM_OPENINGS
# new streams at a time check their caller on the request pool; a burst of others waits its
# turn, and the pool keeps connections for the writers.
TRANSCRIPTS_STREAM_OPENINGS = int(os.environ.get("TRANSCRIPTS_STREAM_OPENINGS", "2"))
TRANSCRIPTS_STREAM_READ_CONNECTIONS = int(
    os.environ.get("TRANSCRIPTS_STREAM_READ_CONNECTIONS", "4")
)
TRANSCRIPTS_STREAM_READ_TIMEOUT = float(os.environ.get("TRANSCRIPTS_STREAM_READ_TIMEOUT", "5"))
TRANSCRIPTS_STREAMS_MAX = int(os.environ.get("TRANSCRIPTS_STREAMS_MAX", "10000"))
TRANSCRIPTS_STREAM_QUEUE_SIZE = int(os.environ.get("TRANSCRIPTS_STREAM_QUEUE_SIZE", "100"))
# A streaming read replica (DATABASE_REPLICA_URL): plain reads of the pages and the API go to
# it, writes and a client's reads for TRANSCRIPTS_READ_PRIMARY_SECONDS after it wrote go to the
# primary (transcripts/db_router.py, transcripts/read_your_writes.py); migrations only run on
# the primary. A replica that does not answer is skipped for TRANSCRIPTS_REPLICA_RETRY_SECONDS.
TRANSCRIPTS_READ_PRIMARY_SECONDS = int(os.environ.get("TRANSCRIPTS_READ_PRIMARY_SECONDS", "5"))
TRANSCRIPTS_REPLICA_RETRY_SECONDS = float(os.environ.get("TRANSCRIPTS_REPLICA_RETRY_SECONDS", "5"))
_replica_url = os.environ.get("DATABASE_REPLICA_URL", "").strip()
if _replica_url:
    _replica = parse_database_url(_replica_url)
    _replica["OPTIONS"] = {
        **{k: v for k, v in DATABASES["default"]["OPTIONS"].items() if k != "pool"},
        **_replica["OPTIONS"],
    }
    if "pool" in DATABASES["default"]["OPTIONS"]:
        _replica["OPTIONS"]["pool"] = dict(DATABASES["default"]["OPTIONS"]["pool"])
        _replica["CONN_HEALTH_CHECKS"] = True
    # Tests read the test database through this alias too, never create one on the replica.
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES["replica"] = _replica
    DATABASE_ROUTERS = ["transcripts.db_router.ReplicaRouter"]
    # After the outage middleware: a replica failing mid-request is answered 503, not 500.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("transcripts.outage.OutageMiddleware") + 1,
        "transcripts.read_your_writes.ReadYourWritesMiddleware",
    )
# Probes (load balancers, orchestrators) call these over plain HTTP inside the network; a
# redirect to HTTPS would read as healthy whatever the database's state.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# django-axes counts failed logins in the database (shared by every process) and locks a
# username from one address after AXES_FAILURE_LIMIT failures for AXES_COOLOFF_TIME, on
# /accounts/login/ and /admin/login/ alike (429 and the page registration/locked_out.html).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = _env_bool("TRANSCRIPTS_LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = int(os.environ.get("TRANSCRIPTS_LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(
    minutes=int(os.environ.get("TRANSCRIPTS_LOGIN_LOCKOUT_MINUTES", "15"))
)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Failures only: successful logins are not logged a second time. Lockouts are lifted with
# `manage.py axes_reset…`, not from the admin (which stays per project).
AXES_DISABLE_ACCESS_LOG = True
AXES_ENABLE_ADMIN = False
# The address is the connection's: a client-sent X-Forwarded-For would pick its own.
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve files from the finders so `serve` works without a collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default", "generation"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "transcripts": {"level": os.environ.get("TRANSCRIPTS_LOG_LEVEL", "INFO")},
        # The pool warns on every failed reconnection (twice a second during an outage);
        # transcripts.outage reports an outage once per 10 s instead.
        "psycopg.pool": {"level": "ERROR"},
    },
}

# Transcripts' own settings.
TRANSCRIPTS_SNAPSHOT_EVERY = int(os.environ.get("TRANSCRIPTS_SNAPSHOT_EVERY", "500"))
TRANSCRIPTS_MAX_BODY_BYTES = int(os.environ.get("TRANSCRIPTS_MAX_BODY_BYTES", str(5 * 1024 * 1024)))
TRANSCRIPTS_MAX_BATCH_EVENTS = int(os.environ.get("TRANSCRIPTS_MAX_BATCH_EVENTS", "5000"))
TRANSCRIPTS_MAX_JSON_DEPTH = int(os.environ.get("TRANSCRIPTS_MAX_JSON_DEPTH", "64"))
# The OTLP receiver's own limit, before and after gzip (exporters batch many spans at once).
TRANSCRIPTS_OTLP_MAX_BYTES = int(
    os.environ.get("TRANSCRIPTS_OTLP_MAX_BYTES", str(10 * 1024 * 1024))
)
DATA_UPLOAD_MAX_MEMORY_SIZE = TRANSCRIPTS_MAX_BODY_BYTES
# The API's quotas (transcripts/limits.py, counted in PostgreSQL per minute): requests and
# events (appended events, imported messages, OTLP spans) per token, and per project (a
# project's own requests_per_minute / events_per_minute replace the project defaults).
# Past one: 429 with Retry-After. TRANSCRIPTS_RATE_LIMITS=0 turns them off.
TRANSCRIPTS_RATE_LIMITS = _env_bool("TRANSCRIPTS_RATE_LIMITS", True)
TRANSCRIPTS_TOKEN_REQUESTS_PER_MINUTE = int(
    os.environ.get("TRANSCRIPTS_TOKEN_REQUESTS_PER_MINUTE", "6000")
)
TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE = int(
    os.environ.get("TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE", "600000")
)
TRANSCRIPTS_PROJECT_REQUESTS_PER_MINUTE = int(
    os.environ.get("TRANSCRIPTS_PROJECT_REQUESTS_PER_MINUTE", "30000")
)
TRANSCRIPTS_PROJECT_EVENTS_PER_MINUTE = int(
    os.environ.get("TRANSCRIPTS_PROJECT_EVENTS_PER_MINUTE", "3000000")
)

# Generation: leases, re-queueing and the OpenAI-compatible generator (key only from the env).
TRANSCRIPTS_LEASE_SECONDS = float(os.environ.get("TRANSCRIPTS_LEASE_SECONDS", "30"))
TRANSCRIPTS_REQUEUE_EXPIRED = _env_bool("TRANSCRIPTS_REQUEUE_EXPIRED", False)
# How often a worker applies the projects' retention periods (manage.py purge_expired does it
# on demand).
TRANSCRIPTS_PURGE_EVERY_SECONDS = float(os.environ.get("TRANSCRIPTS_PURGE_EVERY_SECONDS", "3600"))
TRANSCRIPTS_EXTERNAL_WEBHOOK_URL = os.environ.get("TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", "")
TRANSCRIPTS_OPENAI_BASE_URL = os.environ.get("TRANSCRIPTS_OPENAI_BASE_URL", "")
TRANSCRIPTS_OPENAI_MODEL = os.environ.get("TRANSCRIPTS_OPENAI_MODEL", "")

# Model prices for the run trace's cost column: US dollars per 1M input and output tokens.
# TRANSCRIPTS_PRICES_FILE (a JSON file) and then TRANSCRIPTS_PRICES (JSON text) add models to
# these defaults or replace them: {"my-model": {"input": 0.5, "output": 1.5}}. A model that
# is not listed shows no cost ("—"); names match exactly, then case-insensitively, then by the
# longest listed prefix (dated versions: "gpt-4o-2024-08-06" is priced as "gpt-4o").
TRANSCRIPTS_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o": {"input": 2.50, "output": 10.00},
    "gpt-4o-mini": {"input": 0.15, "output": 0.60},
    "gpt-4.1": {"input": 2.00, "output": 8.00},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
    "gpt-4.1-nano": {"input": 0.10, "output": 0.40},
    "o3-mini": {"input": 1.10, "output": 4.40},
    "claude-3-5-haiku": {"input": 0.80, "output": 4.00},
    "claude-3-5-sonnet": {"input": 3.00, "output": 15.00},
    "claude-sonnet-4": {"input": 3.00, "output": 15.00},
    "claude-opus-4": {"input": 15.00, "output": 75.00},
    "gemini-2.0-flash": {"input": 0.10, "output": 0.40},
    "gemini-1.5-pro": {"input": 1.25, "output": 5.00},
    # The offline demo generator's models (demo-1, demo-brief, …) cost nothing.
    "demo": {"input": 0.0, "output": 0.0},
}


def prices_from_json(text: str, where: str) -> dict[str, dict[str, float]]:
    """A price table from JSON text, or ImproperlyConfigured saying what is wrong where."""
    try:
        prices = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(prices, dict) or not all(
        isinstance(price, dict)
        and all(
            isinstance(price.get(k), int | float) and price[k] >= 0 for k in ("input", "output")
        )
        for price in prices.values()
    ):
        raise ImproperlyConfigured(
            f'{where} must map model names to {{"input": dollars, "output": dollars}}'
            " (per 1M tokens, 0 or more)"
        )
    return {
        str(model): {k: float(price[k]) for k in ("input", "output")}
        for model, price in prices.items()
    }


if os.environ.get("TRANSCRIPTS_PRICES_FILE"):
    _prices_path = Path(os.environ["TRANSCRIPTS_PRICES_FILE"])
    TRANSCRIPTS_PRICES.update(prices_from_json(_prices_path.read_text(), str(_prices_path)))
if os.environ.get("TRANSCRIPTS_PRICES"):
    TRANSCRIPTS_PRICES.update(
        prices_from_json(os.environ["TRANSCRIPTS_PRICES"], "TRANSCRIPTS_PRICES")
    )

# Uploaded files (large imports wait here for a worker; use shared storage across machines).
MEDIA_ROOT = Path(os.environ.get("TRANSCRIPTS_MEDIA_ROOT", BASE_DIR / ".data" / "media"))
MEDIA_URL = "media/"
# Imports larger than this go to a background worker; smaller ones are done in the request.
TRANSCRIPTS_SYNC_IMPORT_BYTES = int(os.environ.get("TRANSCRIPTS_SYNC_IMPORT_BYTES", "1000000"))
TRANSCRIPTS_MAX_IMPORT_BYTES = int(os.environ.get("TRANSCRIPTS_MAX_IMPORT_BYTES", str(1 << 30)))
# What one import may hold (docs/import-export.md#limits); TRANSCRIPTS_MAX_JSON_DEPTH applies too.
TRANSCRIPTS_MAX_IMPORT_STRING_BYTES = int(
    os.environ.get("TRANSCRIPTS_MAX_IMPORT_STRING_BYTES", str(16 << 20))
)
TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES = int(
    os.environ.get("TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES", str(32 << 20))
)
TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES = int(
    os.environ.get("TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES", str(64 << 20))
)
TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES = int(
    os.environ.get("TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES", str(32 << 20))
)
TRANSCRIPTS_MAX_ZIP_RATIO = int(os.environ.get("TRANSCRIPTS_MAX_ZIP_RATIO", "200"))
TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES = int(
    os.environ.get("TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES", str(64 << 20))
)
TRANSCRIPTS_MAX_IMPORT_FILE_REFERENCES = int(
    os.environ.get("TRANSCRIPTS_MAX_IMPORT_FILE_REFERENCES", "10")
)
TRANSCRIPTS_IMPORT_JOB_MEMORY_MB = int(os.environ.get("TRANSCRIPTS_IMPORT_JOB_MEMORY_MB", "1024"))
