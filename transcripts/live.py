"""One LISTEN connection per process, shared by every live stream of it (the fan-out).

A stream subscribes to a channel (`listener().subscribe(channel)`) and gets a bounded queue of
that channel's notification payloads. One asyncio task reads the notifications of the single
listening connection and hands each payload to the channel's subscribers; the channel is
LISTENed when it gains its first subscriber and UNLISTENed when it loses its last, and the
connection is closed once no channel is left (it opens again with the next subscriber).

A subscriber whose queue is full (a client too slow to keep up) is dropped, not waited for: it
gets `DROPPED`, so its stream ends with a retry hint and the client comes back with
Last-Event-ID. When the listening connection is lost, every subscriber gets `LOST` (its
stream ends with `event: unavailable`) and the next subscription connects afresh.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import psycopg
from django.conf import settings
from psycopg import sql
from psycopg.rows import TupleRow

from transcripts.db_availability import conninfo, describe

logger = logging.getLogger(__name__)

APPLICATION_NAME = "transcripts-sse"  # shows the listening connection in pg_stat_activity
# What a subscription receives besides payloads: it was too slow and is dropped; the
# listening connection was lost.
DROPPED = "\x00dropped"
LOST = "\x00lost"


@dataclass(eq=False)
class Subscription:
    """One subscriber of one channel: the payloads it was sent, in order."""

    channel: str
    queue: asyncio.Queue[str] = field(default_factory=lambda: asyncio.Queue(_queue_size()))

    def offer(self, payload: str) -> bool:
        """Queue payload; False when the queue is full (the subscriber is too slow)."""
        try:
            self.queue.put_nowait(payload)
        except asyncio.QueueFull:
            return False
        return True

    def end(self, reason: str) -> None:
        """Tell the subscriber its subscription ended (DROPPED or LOST), room made if need be."""
        while not self.offer(reason):
            self.queue.get_nowait()


def _queue_size() -> int:
    return int(settings.TRANSCRIPTS_STREAM_QUEUE_SIZE)


class Listener:
    """The process's LISTEN connection and the subscribers of each channel."""

    def __init__(self) -> None:
        self._conn: psycopg.AsyncConnection[TupleRow] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._channels: dict[str, set[Subscription]] = {}
        self._epochs: dict[str, int] = {}
        self._clock = 0  # never goes back, so no epoch is ever given twice
        self._lock = asyncio.Lock()

    def subscribers(self) -> int:
        """How many subscriptions are open."""
        return sum(len(subs) for subs in self._channels.values())

    def epoch(self, channel: str) -> int:
        """A number that grows with each notification of channel and each subscription to it:
        a read begun at epoch n sees everything notified to a subscriber by then, so the
        subscribers that ask the same at the same epoch may share one read."""
        return self._epochs.get(channel, 0)

    def _tick(self, channel: str) -> None:
        self._clock += 1
        self._epochs[channel] = self._clock

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        """A subscription to channel for the length of the block; raises psycopg.Error when
        the database cannot be reached to listen."""
        sub = Subscription(channel)
        await self._add(sub)
        try:
            yield sub
        finally:
            await self._remove(sub)

    async def _add(self, sub: Subscription) -> None:
        async with self._lock:
            subs = self._channels.get(sub.channel)
            if subs is None:
                await self._execute(sql.SQL("LISTEN {}").format(sql.Identifier(sub.channel)))
                subs = self._channels[sub.channel] = set()
            subs.add(sub)
            self._tick(sub.channel)

    async def _remove(self, sub: Subscription) -> None:
        async with self._lock:
            subs = self._channels.get(sub.channel)
            if subs is None:
                return  # lost with the connection
            subs.discard(sub)  # (a dropped subscriber is gone already)
            if subs:
                return
            del self._channels[sub.channel]
            self._epochs.pop(sub.channel, None)
            if not self._channels:
                await self._close()
            else:
                with suppress(psycopg.Error):
                    await self._execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(sub.channel)))

    async def _execute(self, statement: sql.Composed) -> None:
        """Run statement on the listening connection (connected first if need be): the reader
        holds the connection while it waits, so it stops for the statement and starts again;
        notifications that arrive meanwhile wait in psycopg's backlog."""
        await self._stop_reader()
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                conninfo(), autocommit=True, application_name=APPLICATION_NAME
            )
        try:
            await self._conn.execute(statement)
        except psycopg.Error:
            self._lose()
            raise
        self._reader = asyncio.create_task(self._read(self._conn))

    async def _stop_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader

    async def _read(self, conn: psycopg.AsyncConnection[TupleRow]) -> None:
        """Hands each notification to its channel's subscribers until the connection ends."""
        try:
            async for note in conn.notifies():
                self._deliver(note.channel, note.payload)
        except psycopg.Error as exc:
            if conn is self._conn:
                logger.warning("the live streams' listener was lost: %s", describe(exc))
                self._lose()

    def _deliver(self, channel: str, payload: str) -> None:
        self._tick(channel)
        subs = self._channels.get(channel, set())
        for sub in [s for s in subs if not s.offer(payload)]:
            subs.discard(sub)
            sub.end(DROPPED)

    def _lose(self) -> None:
        """The connection is gone: every subscriber is told, and forgotten."""
        for subs in self._channels.values():
            for sub in subs:
                sub.end(LOST)
        self._channels.clear()
        self._epochs.clear()
        conn, self._conn, self._reader = self._conn, None, None
        if conn is not None:
            closing = asyncio.create_task(conn.close())
            _closing.add(closing)
            closing.add_done_callback(_closing.discard)

    async def _close(self) -> None:
        await self._stop_reader()
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(psycopg.Error):
                await conn.close()


_listeners: dict[asyncio.AbstractEventLoop, Listener] = {}
_closing: set[asyncio.Task[None]] = set()  # lost connections being closed


def listener() -> Listener:
    """The listener of this process (of its running event loop)."""
    loop = asyncio.get_running_loop()
    found = _listeners.get(loop)
    if found is None:
        for stale in [other for other in _listeners if other.is_closed()]:
            del _listeners[stale]
        found = _listeners[loop] = Listener()
    return found
