"""The quick start: `manage.py serve` on a fresh embedded PostgreSQL, then again on it."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
DEMO_TITLES = (
    "Weather agent: should I bike to work?",
    "Haiku about PostgreSQL (regenerated twice, prompt edited)",
    "Planner and coder agents fix a failing test",
)


def _fresh_machine_env(data_dir: Path) -> dict[str, str]:
    """The environment of a developer's shell: no DATABASE_URL, not under pytest."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_VERSION")}
    env["TRANSCRIPTS_PGDATA"] = str(data_dir)
    return env


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


class Server:
    """`manage.py serve` in a subprocess, with its output collected as it comes."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--no-worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_until_serving(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited:\n{self.output}"
            try:
                httpx.get(self.url + "/accounts/login/", timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.3)
        raise AssertionError(f"serve never answered:\n{self.output}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.reader.join(timeout=5)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory no database has used yet; its server is stopped afterwards."""
    base = Path(tempfile.mkdtemp(prefix="transcripts-serve-"))
    data_dir = base / "pg"
    try:
        yield data_dir
    finally:
        if data_dir.exists():
            _manage(_fresh_machine_env(data_dir), "embedded_db", "stop")
        shutil.rmtree(base, ignore_errors=True)


def _log_in(client: httpx.Client, password: str) -> httpx.Response:
    client.get("/accounts/login/")
    return client.post(
        "/accounts/login/",
        data={
            "username": "admin",
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
            "next": "/",
        },
        headers={"Referer": str(client.base_url) + "/accounts/login/"},
    )


def test_serve_sets_up_a_fresh_machine_and_reuses_it_the_next_time(data_dir: Path) -> None:
    env = _fresh_machine_env(data_dir)
    server = Server(env, free_port())
    try:
        server.wait_until_serving()
        created = re.search(r"Created admin login: admin / (\S+)", server.output)
        assert created, server.output
        password = created.group(1)
        # The password is kept beside this database's data directory, readable by its owner only.
        password_file = data_dir.with_name("pg.admin-password.txt")
        assert password_file.read_text().strip() == password
        assert password_file.stat().st_mode & 0o777 == 0o600
        assert "Demo data loaded." in server.output

        with httpx.Client(base_url=server.url, timeout=30) as client:
            css = client.get("/static/css/app.css")
            assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
            assert client.get("/static/django_htmx/htmx-2.min.js").status_code == 200
            assert client.get("/").status_code == 302  # logged out: to the login page
            assert _log_in(client, "wrong").status_code == 200  # the form again
            assert _log_in(client, password).status_code == 302
            home = client.get("/")
            assert home.status_code == 200
            first_listing = home.text.replace("&#x27;", "'")
            # A row names its thread in its link, its checkbox and its menu: count, then compare.
            once = [first_listing.count(title) for title in DEMO_TITLES]
            assert all(once), once
            # The printed admin is the demo project's admin member, not only a superuser.
            project = client.get("/p/default/").text
            assert 'admin <span class="muted">(you)</span>' in project
            assert '<option value="admin" selected>' in project
    finally:
        server.stop()

    again = Server(env, free_port())
    try:
        again.wait_until_serving()
        assert f"Admin login: admin / {password}" in again.output
        assert "Demo data already present." in again.output
        assert "Created admin login" not in again.output
        with httpx.Client(base_url=again.url, timeout=30) as client:
            assert _log_in(client, password).status_code == 302
            listing = client.get("/").text.replace("&#x27;", "'")
            assert [listing.count(title) for title in DEMO_TITLES] == once  # not loaded twice
    finally:
        again.stop()

    stopped = _manage(env, "embedded_db", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout


def test_a_command_that_never_connects_still_leaves_a_running_cluster(data_dir: Path) -> None:
    """A new cluster starts on a thread while Django loads (config/database.py); a command
    that ends before it is up waits for it rather than leave half a cluster."""
    env = _fresh_machine_env(data_dir)
    checked = _manage(env, "check")
    assert checked.returncode == 0, checked.stderr
    assert (data_dir / "PG_VERSION").exists()
    stopped = _manage(env, "embedded_db", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr


@pytest.mark.django_db
def test_serve_never_prints_a_stored_password_that_does_not_open_this_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from django.contrib.auth import get_user_model

    from transcripts.management.commands.serve import Command, admin_password_file

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("TRANSCRIPTS_PGDATA", str(tmp_path / "other"))
    assert admin_password_file() == tmp_path / "other.admin-password.txt"
    admin_password_file().write_text("written-by-another-database\n")
    get_user_model().objects.create_superuser("admin", "a@example.com", "the-real-one")

    out = StringIO()
    command = Command(stdout=out)
    command._ensure_admin()
    assert "written-by-another-database" not in out.getvalue()
    assert "changepassword admin" in out.getvalue()

    admin_password_file().write_text("the-real-one\n")
    out = StringIO()
    Command(stdout=out)._ensure_admin()
    assert "Admin login: admin / the-real-one" in out.getvalue()


def test_the_default_password_file_is_the_documented_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from transcripts.management.commands.serve import admin_password_file

    monkeypatch.delenv("TRANSCRIPTS_PGDATA", raising=False)
    assert admin_password_file() == ROOT / ".data" / "admin-password.txt"
    monkeypatch.setenv("TRANSCRIPTS_PGDATA", "")
    assert admin_password_file() == ROOT / ".data" / "admin-password.txt"


def _serve_command(port: int) -> list[str]:
    return [sys.executable, "manage.py", "serve", "--port", str(port), "--no-worker", "--no-demo"]


def test_serve_on_a_port_in_use_says_so_and_exits_with_1_without_announcing() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        result = subprocess.run(
            _serve_command(port), cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"port {port} is in use: set PORT=" in result.stderr
    assert "Traceback" not in result.stderr
    assert "serving on" not in result.stdout + result.stderr


def test_the_port_in_use_message_comes_from_the_bind_itself() -> None:
    from transcripts.management.commands.serve import PortUnavailable, bind_listener

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with pytest.raises(PortUnavailable, match=f"port {port} is in use: set PORT="):
            bind_listener("127.0.0.1", port)
    free = bind_listener("127.0.0.1", 0)
    free.close()


@pytest.mark.django_db(transaction=True)
def test_serve_listens_before_it_announces_the_address() -> None:
    from django.contrib.auth import get_user_model

    from tests.support import database_url_of_tests

    # An admin exists, so serve neither creates one nor writes a password file.
    get_user_model().objects.create_superuser("admin", "a@example.com", "not-printed")
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url_of_tests()}
    process = subprocess.Popen(
        _serve_command(port),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if "serving on" in line:
                break
        assert f"Transcripts is serving on http://127.0.0.1:{port}/" in "".join(seen), seen
        # Announced: the port already accepts connections (no window for "address in use").
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)
