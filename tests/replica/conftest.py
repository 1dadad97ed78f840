"""Replica tests' fixtures: a primary, its streaming replica and uvicorn reading from both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.stack import make_stack, start_server
from tests.live_server import stop_process
from tests.replica.world import Replica, ReplicaWorld

# Short, so the tests see the read-your-writes window end without waiting long.
PRIMARY_SECONDS = 2


@pytest.fixture(scope="session")
def world() -> Iterator[ReplicaWorld]:
    """A seeded primary (the faults' own cluster), a replica of it, and a server on both."""
    stack = make_stack()
    replica = Replica(stack)
    try:
        stack.env.update(
            DATABASE_REPLICA_URL=replica.url,
            TRANSCRIPTS_READ_PRIMARY_SECONDS=str(PRIMARY_SECONDS),
            TRANSCRIPTS_REPLICA_RETRY_SECONDS="1",
        )
        server = start_server(stack)
        try:
            yield ReplicaWorld(stack=stack, replica=replica, url=server.url)
        finally:
            stop_process(server.process)
            stack.stop_processes()
    finally:
        replica.remove()


@pytest.fixture
def paused(world: ReplicaWorld) -> Iterator[ReplicaWorld]:
    """The world with the replica caught up, then not applying the primary's changes."""
    world.replica.catch_up(world.stack)
    world.replica.pause()
    try:
        yield world
    finally:
        world.replica.resume()
