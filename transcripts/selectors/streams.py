"""Reads of the live run stream (`api/stream.py`): a run's events after a seq, and the run's
state, on a small pool of connections of the streams' own (TRANSCRIPTS_STREAM_READ_CONNECTIONS
a process), borrowed for one read each: a waiting stream holds no connection, and the streams
never take a connection the requests' pool would give a writer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg
from django.conf import settings
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from transcripts.db_availability import conninfo
from transcripts.live import APPLICATION_NAME

READ_APPLICATION_NAME = f"{APPLICATION_NAME}-read"  # the stream reads in pg_stat_activity
_EVENTS_AFTER = (
    "SELECT seq, kind, data::text, at FROM transcripts_event"
    " WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)
_RUN_STATE = "SELECT status, last_seq, error::text FROM transcripts_run WHERE id = %s"
ReadPool = AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]]


@dataclass(frozen=True)
class StoredEvent:
    """One event of the run, as stored (its data still JSON text)."""

    seq: int
    kind: str
    data_json: str
    at: datetime


@dataclass(frozen=True)
class RunState:
    """What the stream reads of its run: its status, last seq and error (JSON text)."""

    status: str
    last_seq: int
    error_json: str | None


_pools: dict[asyncio.AbstractEventLoop, ReadPool] = {}


async def _pool() -> ReadPool:
    """The stream reads' pool of this process (of its running event loop), opened on first
    use; its idle connections close after a minute."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = AsyncConnectionPool(
            conninfo(),
            kwargs={"autocommit": True, "application_name": READ_APPLICATION_NAME},
            min_size=0,
            max_size=int(settings.TRANSCRIPTS_STREAM_READ_CONNECTIONS),
            timeout=float(settings.TRANSCRIPTS_STREAM_READ_TIMEOUT),
            max_idle=60.0,
            reconnect_timeout=3.0,
            check=AsyncConnectionPool.check_connection,
            open=False,
            name="stream-reads",
        )
        await pool.open()
    return pool


async def events_after(run_id: UUID, after_seq: int, limit: int) -> list[StoredEvent]:
    """Up to limit events of the run after after_seq, in order."""
    async with (await _pool()).connection() as conn:
        cursor = await conn.execute(_EVENTS_AFTER, (run_id, after_seq, limit))
        return [StoredEvent(*row) for row in await cursor.fetchall()]


async def run_state(run_id: UUID) -> RunState | None:
    """The run's status, last seq and error, None when there is no such run."""
    async with (await _pool()).connection() as conn:
        cursor = await conn.execute(_RUN_STATE, (run_id,))
        row = await cursor.fetchone()
        return RunState(*row) if row is not None else None
