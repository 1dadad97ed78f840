"""Production mode (DJANGO_DEBUG=0) in real processes: settings printed by a subprocess, uvicorn."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests import live_server
from tests.support import database_url_of_tests

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "production-test-" + secrets.token_urlsafe(48)
# Variables of the developer's shell that would change what production mode means here.
OWN_VARIABLES = ("DJANGO_", "TRANSCRIPTS_HTTPS", "TRANSCRIPTS_HSTS_", "TRANSCRIPTS_PROXY_")


def production_env(**overrides: str) -> dict[str, str]:
    """The environment of a production process: DJANGO_DEBUG=0, a real secret key, overrides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(OWN_VARIABLES)}
    env.update(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=SECRET_KEY, LOG_LEVEL="WARNING")
    env.update(overrides)
    return env


def effective_settings(env: dict[str, str], *names: str) -> dict[str, Any]:
    """The named settings as a fresh process with env loads them."""
    code = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """manage.py args in a fresh process with env."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextmanager
def serving(env: dict[str, str], *uvicorn_options: str) -> Iterator[str]:
    """uvicorn serving config.asgi on the test database with env; yields its base URL. Any
    answer from the login page means it is up: a production server may redirect plain HTTP."""
    server_env = {**env, "DATABASE_URL": database_url_of_tests()}
    with live_server.serving(
        server_env, *uvicorn_options, ready_path="/accounts/login/", any_status=True
    ) as server:
        yield server.url
