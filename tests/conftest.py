"""Fixtures every test package shares: the team, a live ASGI server, worker processes, and
the browser (tests/browser.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.base import Team, make_team
from tests.browser import browser
from tests.live_server import ROOT, LiveServer, serving, stop_process
from tests.support import database_url_of_tests

__all__ = ["browser", "live_server_asgi", "start_worker", "team"]


@pytest.fixture
def team(db: None) -> Team:
    """Projects alpha and beta with an owner, a moderator, an editor, a viewer, an outsider
    (admin of beta), a stranger (no project) and a superuser."""
    return make_team()


@pytest.fixture
def live_server_asgi() -> Iterator[LiveServer]:
    """uvicorn serving config.asgi on a random loopback port, on the test database."""
    env = {**os.environ, "DATABASE_URL": database_url_of_tests(), "LOG_LEVEL": "WARNING"}
    with serving(env) as server:
        yield server


@pytest.fixture
def start_worker() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `manage.py worker` processes on the test database; stops them afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> subprocess.Popen[bytes]:
        environment = {**os.environ, "DATABASE_URL": database_url_of_tests(), **env}
        process = subprocess.Popen(
            [sys.executable, "manage.py", "worker", "--interval", "0.05", "--no-reload",
             "--no-startup-delay"],
            cwd=ROOT,
            env=environment,
            start_new_session=True,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        stop_process(process)
