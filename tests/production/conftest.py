"""Production mode (DJANGO_DEBUG=0) in real processes: settings printed by a subprocess, uvicorn."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(env: dict[str, str], *uvicorn_options: str) -> Iterator[str]:
    """uvicorn serving config.asgi on the test database with env; yields its base URL."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
         "--port", str(port), "--lifespan", "off", "--log-level", "warning", *uvicorn_options],
        cwd=ROOT,
        env={**env, "DATABASE_URL": database_url_of_tests()},
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                # Any answer will do: a production server may redirect plain HTTP.
                httpx.get(url + "/accounts/login/", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("uvicorn did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
