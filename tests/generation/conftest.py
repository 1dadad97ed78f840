"""Fixtures: a real worker process on the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import database_url_of_tests

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def start_worker() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `manage.py worker` processes on the test database; stops them afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> subprocess.Popen[bytes]:
        environment = {**os.environ, "DATABASE_URL": database_url_of_tests(), **env}
        process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "worker",
                "--interval",
                "0.05",
                "--no-reload",
                "--no-startup-delay",
            ],
            cwd=ROOT,
            env=environment,
            start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
