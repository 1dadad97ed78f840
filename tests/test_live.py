"""The process's one LISTEN connection (transcripts/live.py): fan-out to the subscribers of a
channel, a slow subscriber dropped, a lost connection told to everyone, on the test database."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from tests.support import database_url_of_tests
from transcripts.live import APPLICATION_NAME, DROPPED, LOST, Listener

pytestmark = pytest.mark.django_db(transaction=True)


def _notify(channel: str, *payloads: str) -> None:
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        for payload in payloads:
            conn.execute("SELECT pg_notify(%s, %s)", [channel, payload])


def _listeners() -> int:
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            [APPLICATION_NAME],
        ).fetchone()
    return int(row[0]) if row else 0


async def _received(queue: asyncio.Queue[str], count: int) -> list[str]:
    return [await asyncio.wait_for(queue.get(), 5) for _ in range(count)]


def test_every_subscriber_of_a_channel_gets_its_notifications_on_one_connection():
    async def scenario() -> tuple[list[str], list[str], list[str], int, int]:
        hub = Listener()
        async with (
            hub.subscribe("live_a") as one,
            hub.subscribe("live_a") as two,
            hub.subscribe("live_b") as other,
        ):
            during = await asyncio.to_thread(_listeners)
            await asyncio.to_thread(_notify, "live_a", "x", "y")
            await asyncio.to_thread(_notify, "live_b", "z")
            got = (
                await _received(one.queue, 2),
                await _received(two.queue, 2),
                await _received(other.queue, 1),
            )
        return (*got, during, await asyncio.to_thread(_listeners))

    one, two, other, during, after = asyncio.run(scenario())

    assert one == two == ["x", "y"]
    assert other == ["z"]
    assert during == 1
    assert after == 0  # closed with its last channel


def test_a_subscriber_too_slow_to_keep_up_is_dropped_without_holding_back_the_others(settings):
    settings.TRANSCRIPTS_STREAM_QUEUE_SIZE = 3

    async def scenario() -> tuple[list[str], list[str], int]:
        hub = Listener()
        async with hub.subscribe("live_slow") as slow, hub.subscribe("live_slow") as fast:
            seen: list[str] = []
            for n in range(5):
                await asyncio.to_thread(_notify, "live_slow", str(n))
                seen += await _received(fast.queue, 1)
            left = [slow.queue.get_nowait() for _ in range(slow.queue.qsize())]
            return seen, left, hub.subscribers()

    seen, left, subscribers = asyncio.run(scenario())

    assert seen == ["0", "1", "2", "3", "4"]
    assert left[-1] == DROPPED
    assert subscribers == 1


def test_a_lost_listening_connection_is_told_to_every_subscriber_and_replaced():
    async def scenario() -> tuple[list[str], list[str]]:
        hub = Listener()
        async with hub.subscribe("live_lost") as sub:
            await asyncio.to_thread(_terminate_listener)
            lost = await _received(sub.queue, 1)
        async with hub.subscribe("live_lost") as again:
            await asyncio.to_thread(_notify, "live_lost", "back")
            return lost, await _received(again.queue, 1)

    lost, back = asyncio.run(scenario())

    assert lost == [LOST]
    assert back == ["back"]


def _terminate_listener() -> None:
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            [APPLICATION_NAME],
        )
