"""A read the replica fails mid-request, for real: the request is served from the primary.

A replica query is held mid-flight by a lock the primary takes (replay holds it on the replica
too, so the query waits); then the replica either cancels it for a conflict with recovery
(SQLSTATE 40001: replay needs a lock the query holds, and max_standby_streaming_delay is 0) or
goes down. Either way the answer is the primary's, not a 500 or a 503."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import psycopg
import pytest

from tests.faults.stack import login, wait_for
from tests.replica.test_replica import api, new_thread
from tests.replica.world import ReplicaWorld
from transcripts.read_your_writes import PRIMARY_COOKIE

CONFLICT = "canceling statement due to conflict with recovery"


class InFlight:
    """A request sent from another thread; `response` once it is answered."""

    def __init__(self, client: httpx.Client, path: str) -> None:
        self.response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._send, args=(client, path), daemon=True)
        self._thread.start()

    def _send(self, client: httpx.Client, path: str) -> None:
        self.response = client.get(path)

    def answer(self) -> httpx.Response:
        self._thread.join(60)
        assert self.response is not None, "the request was not answered"
        return self.response


def _heading(page: str) -> str:
    found = re.search(r"<title>(.*?)</title>", page, re.S)
    return found.group(1).strip() if found else ""


@contextmanager
def locked_on_primary(world: ReplicaWorld, table: str) -> Iterator[psycopg.Connection]:
    """An open transaction of the primary holding table exclusively, once the replica has
    replayed the lock; rolled back on leaving."""
    with psycopg.connect(world.stack.cluster.url) as conn:
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        try:
            wait_for(lambda: world.replica.replayed_lock_on(table), 30, "the lock's replay")
            yield conn
        finally:
            conn.rollback()


def _server_connected_to_the_replica(world: ReplicaWorld) -> bool:
    """After a GET, whether the server holds a connection to the replica: after a restart its
    first read may find the old connection dead and read from the primary for a second
    (TRANSCRIPTS_REPLICA_RETRY_SECONDS), which would take the tests' reads off the replica."""
    assert api(world).get(f"/api/v1/threads/{world.stack.thread}").status_code == 200
    (count,), *_ = world.replica.query(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    )
    return bool(count)


@pytest.fixture
def fresh(world: ReplicaWorld) -> Iterator[ReplicaWorld]:
    """The world with the replica up and caught up, and reading from it again."""
    wait_for(lambda: _server_connected_to_the_replica(world), 30, "the server to use the replica")
    world.replica.catch_up(world.stack)
    yield world
    world.replica.cancel_conflicts_at_once(False)


def test_a_read_cancelled_by_a_recovery_conflict_is_served_from_the_primary(
    fresh: ReplicaWorld,
) -> None:
    writer = api(fresh)
    thread_id, _ = new_thread(writer)
    begun = writer.post(f"/api/v1/threads/{thread_id}/runs", json={})
    assert begun.status_code == 201, begun.text
    run_id = begun.json()["id"]
    fresh.replica.catch_up(fresh.stack)
    fresh.replica.cancel_conflicts_at_once(True)
    log_before = len(fresh.replica.log())

    with locked_on_primary(fresh, "transcripts_thread"):
        # Reading a run joins its thread: the replica's query holds the run table and waits
        # for the thread table, which replay holds.
        reading = InFlight(api(fresh), f"/api/v1/runs/{run_id}")
        wait_for(fresh.replica.waiting_for_a_lock, 30, "the read to wait on the replica")
        # Replay now needs the run table, which the waiting query holds: with no delay
        # allowed, the replica cancels the query.
        with locked_on_primary(fresh, "transcripts_run"):
            wait_for(lambda: not fresh.replica.waiting_for_a_lock(), 30, "the cancellation")

    response = reading.answer()
    assert response.status_code == 200, response.text
    assert response.json()["id"] == run_id
    assert CONFLICT in fresh.replica.log()[log_before:]


def test_a_page_whose_replica_goes_down_mid_request_comes_from_the_primary(
    fresh: ReplicaWorld,
) -> None:
    browser = login(fresh.url, "editor", "editor-password")
    browser.cookies.delete(PRIMARY_COOKIE)
    before = browser.get(f"/t/{fresh.stack.thread}/")
    assert before.status_code == 200
    try:
        with locked_on_primary(fresh, "transcripts_thread"):
            reading = InFlight(browser, f"/t/{fresh.stack.thread}/")
            wait_for(fresh.replica.waiting_for_a_lock, 30, "the page's read to wait on the replica")
            fresh.replica.stop()
        response = reading.answer()
        assert response.status_code == 200, response.text[:300]
        assert _heading(response.text) == _heading(before.text) != ""
    finally:
        fresh.replica.start()
    fresh.replica.catch_up(fresh.stack)


def test_a_replica_that_goes_down_mid_request_is_not_an_error(fresh: ReplicaWorld) -> None:
    thread_id, title = new_thread(api(fresh))
    fresh.replica.catch_up(fresh.stack)
    try:
        with locked_on_primary(fresh, "transcripts_thread"):
            reading = InFlight(api(fresh), f"/api/v1/threads/{thread_id}")
            wait_for(fresh.replica.waiting_for_a_lock, 30, "the read to wait on the replica")
            fresh.replica.stop()
        response = reading.answer()
        assert response.status_code == 200, response.text
        assert response.json()["title"] == title
    finally:
        fresh.replica.start()
    fresh.replica.catch_up(fresh.stack)
