"""Django settings for Transcripts."""

from __future__ import annotations

import os
from pathlib import Path

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
    "transcripts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
            ],
        },
    },
]

DATABASES = {"default": parse_database_url(database_url(BASE_DIR))}
# A connection pool per process (psycopg_pool): each request borrows a connection instead of
# opening one. Off under pytest, whose test database is created after the settings load.
if _env_bool("TRANSCRIPTS_DB_POOL", not os.environ.get("PYTEST_VERSION")):
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": int(os.environ.get("TRANSCRIPTS_DB_POOL_SIZE", "8")),
        "timeout": 30,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
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
    "loggers": {"transcripts": {"level": os.environ.get("TRANSCRIPTS_LOG_LEVEL", "INFO")}},
}

# Transcripts' own settings.
TRANSCRIPTS_SNAPSHOT_EVERY = int(os.environ.get("TRANSCRIPTS_SNAPSHOT_EVERY", "500"))
TRANSCRIPTS_MAX_BODY_BYTES = int(os.environ.get("TRANSCRIPTS_MAX_BODY_BYTES", str(5 * 1024 * 1024)))
TRANSCRIPTS_MAX_BATCH_EVENTS = int(os.environ.get("TRANSCRIPTS_MAX_BATCH_EVENTS", "5000"))
TRANSCRIPTS_MAX_JSON_DEPTH = int(os.environ.get("TRANSCRIPTS_MAX_JSON_DEPTH", "64"))
DATA_UPLOAD_MAX_MEMORY_SIZE = TRANSCRIPTS_MAX_BODY_BYTES

# Generation: leases, re-queueing and the OpenAI-compatible generator (key only from the env).
TRANSCRIPTS_LEASE_SECONDS = float(os.environ.get("TRANSCRIPTS_LEASE_SECONDS", "30"))
TRANSCRIPTS_REQUEUE_EXPIRED = _env_bool("TRANSCRIPTS_REQUEUE_EXPIRED", False)
# How often a worker applies the projects' retention periods (manage.py purge_expired does it
# on demand).
TRANSCRIPTS_PURGE_EVERY_SECONDS = float(os.environ.get("TRANSCRIPTS_PURGE_EVERY_SECONDS", "3600"))
TRANSCRIPTS_EXTERNAL_WEBHOOK_URL = os.environ.get("TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", "")
TRANSCRIPTS_OPENAI_BASE_URL = os.environ.get("TRANSCRIPTS_OPENAI_BASE_URL", "")
TRANSCRIPTS_OPENAI_MODEL = os.environ.get("TRANSCRIPTS_OPENAI_MODEL", "")

# Uploaded files (large imports wait here for a worker; use shared storage across machines).
MEDIA_ROOT = Path(os.environ.get("TRANSCRIPTS_MEDIA_ROOT", BASE_DIR / ".data" / "media"))
MEDIA_URL = "media/"
# Imports larger than this go to a background worker; smaller ones are done in the request.
TRANSCRIPTS_SYNC_IMPORT_BYTES = int(os.environ.get("TRANSCRIPTS_SYNC_IMPORT_BYTES", "1000000"))
TRANSCRIPTS_MAX_IMPORT_BYTES = int(os.environ.get("TRANSCRIPTS_MAX_IMPORT_BYTES", str(1 << 30)))
