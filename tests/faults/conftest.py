"""Fault tests' fixtures: the world of tests/faults/stack.py, with its processes cleaned up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.stack import Stack, make_stack, start_server
from tests.live_server import LiveServer, stop_process


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The faults' own PostgreSQL, migrated and seeded; processes started on it are stopped."""
    stack = make_stack()
    yield stack
    stack.stop_processes()


@pytest.fixture
def processes(stack: Stack) -> Iterator[Stack]:
    """The stack, with the processes a test starts stopped after it (and the database up)."""
    yield stack
    stack.stop_processes()
    if not stack.database_up():
        stack.cluster.start()


@pytest.fixture(scope="session")
def server(stack: Stack) -> Iterator[LiveServer]:
    """uvicorn on the faults' database, shared by the tests (each leaves the database up)."""
    started = start_server(stack)
    yield started
    stop_process(started.process)
