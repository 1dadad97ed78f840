"""Live streams at scale on one server process: they share one listening connection, hold no
pooled connection while they wait, and never starve the writers; an empty pool is `busy`."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from tests.factories import events, make_thread
from tests.live_server import LiveServer, serving
from tests.support import database_url_of_tests
from transcripts import ledger
from transcripts.ids import to_uuid

pytestmark = pytest.mark.django_db(transaction=True)

STREAMS = 200


def _server_env(**extra: str) -> dict[str, str]:
    """The environment of a server on the test database with its connection pool on (as in
    production; the tests' default leaves it off)."""
    return {
        **os.environ,
        "DATABASE_URL": database_url_of_tests(),
        "LOG_LEVEL": "WARNING",
        "TRANSCRIPTS_DB_POOL": "1",
        **extra,
    }


@pytest.fixture
def pooled_server() -> Iterator[LiveServer]:
    with serving(_server_env()) as server:
        yield server


def _backends() -> int:
    """The connections open to the test database, this test's own excluded."""
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def _follow(
    client: httpx.AsyncClient, url: str, listening: asyncio.Event, out: list[int]
) -> None:
    """Read one stream: count it listening at its retry frame, record the first event's seq."""
    async with client.stream("GET", url) as response:
        out.append(response.status_code)
        if response.status_code != 200:
            listening.set()
            return
        async for line in response.aiter_lines():
            if line.startswith("retry:"):
                listening.set()
            elif line.startswith("id: "):
                out.append(int(line.removeprefix("id: ")))
                return


async def _many_streams_and_one_append(
    base: str, run_id: str, token: str
) -> tuple[list[list[int]], int, int, int]:
    """Open STREAMS streams on run_id, append one event once they all listen; returns what
    each stream got (status, seq), the append's status and the backends before and while."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=30) as client:
        before = await asyncio.to_thread(_backends)
        url = f"{base}/api/v1/runs/{run_id}/stream"
        listening = [asyncio.Event() for _ in range(STREAMS)]
        got: list[list[int]] = [[] for _ in range(STREAMS)]
        readers = [
            asyncio.create_task(_follow(client, url, ready, out))
            for ready, out in zip(listening, got, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in listening)), 60)
        during = await asyncio.to_thread(_backends)
        body = {"events": events(("text-delta", {"delta": "to all"}), start=1)}
        append = await client.post(f"{base}/api/v1/runs/{run_id}/events", json=body)
        await asyncio.wait_for(asyncio.gather(*readers), 30)
    return got, append.status_code, before, during


def test_two_hundred_streams_all_receive_an_append_on_a_constant_number_of_backends(
    pooled_server, make_token
):
    run, _ = ledger.begin_run(thread=make_thread())
    token = make_token("read", "ingest")
    # One stream first, so the pools and the listener are warm in the count before.
    warm = httpx.get(f"{pooled_server.url}/api/v1/runs/{run.id}", headers={
        "Authorization": f"Bearer {token}"})  # fmt: skip
    assert warm.status_code == 200

    got, append_status, before, during = asyncio.run(
        _many_streams_and_one_append(pooled_server.url, run.id, token)
    )

    assert append_status == 200
    assert [statuses for statuses in got if statuses != [200, 1]] == []
    # Bounded by the settings, whatever the number of streams: the requests' pool (8, filled by
    # the burst of logins), one listening connection and the streams' read pool (4).
    assert during - before <= 8 + 1 + 4, (before, during)


def test_a_server_whose_pool_is_all_in_use_answers_busy_and_stays_ready(make_token):
    run, _ = ledger.begin_run(thread=make_thread())
    token = make_token("read", "ingest")
    headers = {"Authorization": f"Bearer {token}"}
    env = _server_env(TRANSCRIPTS_DB_POOL_SIZE="1", TRANSCRIPTS_DB_POOL_TIMEOUT="0.5")
    with serving(env) as server, psycopg.connect(database_url_of_tests()) as lock:
        # The append below waits for this lock on its run, holding the pool's one connection.
        lock.execute("SELECT 1 FROM transcripts_run WHERE id = %s FOR UPDATE", [to_uuid(run.id)])
        body = {"events": events(("text-delta", {"delta": "slow"}), start=1)}
        answers: list[int] = []
        url = f"{server.url}/api/v1/runs/{run.id}/events"

        def append() -> None:
            answers.append(httpx.post(url, json=body, headers=headers, timeout=30).status_code)

        slow = threading.Thread(target=append)
        slow.start()
        deadline = time.monotonic() + 20
        while not _waiting_for_a_lock() and time.monotonic() < deadline:
            time.sleep(0.05)
        busy = httpx.get(f"{server.url}/api/v1/runs/{run.id}", headers=headers, timeout=10)
        ready = httpx.get(f"{server.url}/readyz", timeout=10)
        lock.rollback()
        slow.join(30)

    assert busy.status_code == 503
    assert busy.headers["Retry-After"] == "1"
    assert busy.json()["error"]["code"] == "busy"
    assert "busy" in busy.json()["error"]["message"]
    assert ready.status_code == 200
    assert answers == [200]


def _waiting_for_a_lock() -> bool:
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row is not None and int(row[0]) > 0
