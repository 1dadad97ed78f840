"""uvicorn serving config.asgi in a process of its own: how every test that needs a real ASGI
server (SSE, production settings, the faults' and the replica's databases) starts and stops one.

Each caller keeps its own settings: the environment (which database, which mode), extra
uvicorn options, and the page that tells the server is up.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 30


@dataclass
class LiveServer:
    """A running uvicorn: its base URL and its process (the leader of its own group)."""

    url: str
    process: subprocess.Popen[bytes]


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _answers(url: str, *, any_status: bool) -> bool:
    """Whether url answers: with any status, or with a success."""
    try:
        response = httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return any_status or response.is_success


def start_uvicorn(
    env: dict[str, str],
    *options: str,
    ready_path: str = "/healthz",
    any_status: bool = False,
) -> LiveServer:
    """uvicorn on a free loopback port with env and options, once ready_path answers (with a
    success, or with anything when any_status: a production server may redirect plain HTTP)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
         "--port", str(port), "--lifespan", "off", "--log-level", "warning", *options],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + STARTUP_SECONDS
    while not _answers(server.url + ready_path, any_status=any_status):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.1)
    return server


@contextmanager
def serving(
    env: dict[str, str],
    *options: str,
    ready_path: str = "/healthz",
    any_status: bool = False,
) -> Iterator[LiveServer]:
    """start_uvicorn for the length of a with block; stopped however the block ends."""
    server = start_uvicorn(env, *options, ready_path=ready_path, any_status=any_status)
    try:
        yield server
    finally:
        stop_process(server.process)
