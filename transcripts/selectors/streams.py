"""Reads of the live run stream (`api/stream.py`), on a connection of the stream's own: the
LISTEN that wakes it, a run's events after a seq, and the run's state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

APPLICATION_NAME = "transcripts-sse"  # shows the stream connections in pg_stat_activity
_EVENTS_AFTER = (
    "SELECT seq, kind, data::text, at FROM transcripts_event"
    " WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)
_RUN_STATE = "SELECT status, last_seq, error::text FROM transcripts_run WHERE id = %s"
StreamConnection = psycopg.AsyncConnection[TupleRow]


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


async def listening_connection(conninfo: str, channel: str) -> StreamConnection:
    """A new connection to conninfo (a pooled one would be held for the whole life of the
    stream) that listens on channel; closed again when the LISTEN fails."""
    conn = await psycopg.AsyncConnection.connect(
        conninfo, autocommit=True, application_name=APPLICATION_NAME
    )
    try:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    except BaseException:
        await conn.close()
        raise
    return conn


async def events_after(
    conn: StreamConnection, run_id: UUID, after_seq: int, limit: int
) -> list[StoredEvent]:
    """Up to limit events of the run after after_seq, in order."""
    cursor = await conn.execute(_EVENTS_AFTER, (run_id, after_seq, limit))
    return [StoredEvent(*row) for row in await cursor.fetchall()]


async def run_state(conn: StreamConnection, run_id: UUID) -> RunState | None:
    """The run's status, last seq and error, None when there is no such run."""
    cursor = await conn.execute(_RUN_STATE, (run_id,))
    row = await cursor.fetchone()
    return RunState(*row) if row is not None else None
