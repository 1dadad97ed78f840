"""How bench/scale_seed.py's rows reach the database: COPY of pre-formatted lines, several
chunks at once, the big tables' secondary indexes dropped during the load and built again.

Seeding only (never the app): each transaction sets `synchronous_commit = off` (a crash loses
the last chunks of a throwaway store, nothing else), and `bulk_load` drops the secondary
indexes of the big tables while they are filled and builds them again after, as pg_restore
does, so the store measured has exactly the app's schema.
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from django.db import connection

NULL = "\\N"  # COPY's text format for a null field
# The tables bulk_load empties of secondary indexes while they are filled.
BIG_TABLES = ("transcripts_thread", "transcripts_run", "transcripts_event", "transcripts_message")


@dataclass
class Batch:
    """Lines of one COPY transaction, per table (an item may hold several lines)."""

    threads: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)


_THREAD_COLUMNS = (
    "id, project_id, title, metadata, agents, external_id, head_id, hidden, locked,"
    " created_at, updated_at"
)
_RUN_COLUMNS = (
    "id, thread_id, fork_from_id, status, superseded_by_id, last_seq, error, usage, generator,"
    " model, origin, parameters, metadata, created_at, started_at, first_event_at, finished_at,"
    " snapshot, snapshot_seq, lease_owner"
)
_REPORT_COLUMNS = (
    "message_id, thread_id, reporter_id, reason, note, status, resolution_note, created_at"
)
_AUDIT_COLUMNS = (
    "actor_name, action, target_type, target_id, thread_id, project_id, reason, details, created_at"
)


def write(pg: psycopg.Connection[Any], batch: Batch) -> None:
    """COPY a batch in one transaction, events and messages as the ledger's import does; the
    commit does not wait for the disk (a bench's throwaway rows, never the app's)."""
    from transcripts.ledger.bulk_copy import EVENT_COLUMNS, MESSAGE_COLUMNS, copy_lines

    with pg.transaction():
        pg.execute("SET LOCAL synchronous_commit = off")
        for table, columns, lines in (
            ("transcripts_thread", _THREAD_COLUMNS, batch.threads),
            ("transcripts_run", _RUN_COLUMNS, batch.runs),
            ("transcripts_event", EVENT_COLUMNS, batch.events),
            ("transcripts_message", MESSAGE_COLUMNS, batch.messages),
            ("transcripts_report", _REPORT_COLUMNS, batch.reports),
            ("transcripts_auditrecord", _AUDIT_COLUMNS, batch.audit),
        ):
            if lines:
                copy_lines(pg, table, columns, lines)


def django_pg() -> psycopg.Connection[Any]:
    """The psycopg connection under Django's."""
    connection.ensure_connection()
    pg: psycopg.Connection[Any] | None = connection.connection
    assert pg is not None
    return pg


def writer_connection() -> psycopg.Connection[Any]:
    """A connection of its own to Django's database (not one of its pool), for a writer."""
    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def write_all(batches: Iterable[tuple[Batch, int]], *, writers: int = 2) -> Iterator[int]:
    """Write (batch, total) pairs in order, `writers` at once on connections of their own while
    the next batch is built (the batches must share no rows); yields each total once its batch
    and those before it are committed."""
    idle: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
    connections = [writer_connection() for _ in range(writers)]
    for pg in connections:
        idle.put(pg)

    def write_on_idle(batch: Batch) -> None:
        pg = idle.get()
        try:
            write(pg, batch)
        finally:
            idle.put(pg)

    pending: deque[tuple[Future[None], int]] = deque()
    try:
        with ThreadPoolExecutor(max_workers=writers) as pool:
            for batch, total in batches:
                if len(pending) == writers:
                    done, written = pending.popleft()
                    done.result()
                    yield written
                pending.append((pool.submit(write_on_idle, batch), total))
            while pending:
                done, written = pending.popleft()
                done.result()
                yield written
    finally:
        for pg in connections:
            pg.close()


# The indexes of BIG_TABLES no constraint uses (so not the primary keys foreign keys point
# at), partial ones aside: they keep checking uniqueness as the app does or hold few rows, and
# a predicate on a varchar column does not read back as it was written.
_SECONDARY_INDEXES = """
    SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
    FROM pg_index i
    WHERE i.indrelid = ANY(%s::regclass[]) AND i.indpred IS NULL
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    ORDER BY pg_relation_size(i.indrelid) DESC, 1
"""


@dataclass
class Rebuild:
    """The indexes bulk_load dropped, and the seconds building them again took."""

    indexes: list[tuple[str, str]]
    seconds: float = 0.0


@contextmanager
def bulk_load(*, builders: int = 2) -> Iterator[Rebuild]:
    """Drop the secondary indexes of BIG_TABLES while rows are copied in, then create the
    same ones again (`builders` at once, largest table first), as pg_restore does: the rows
    skip their upkeep and the store ends with exactly the app's schema (checked)."""
    pg = django_pg()
    rebuild = Rebuild(pg.execute(_SECONDARY_INDEXES, [list(BIG_TABLES)]).fetchall())
    with pg.transaction():
        for name, _ in rebuild.indexes:
            pg.execute(f"DROP INDEX {name}")
    try:
        yield rebuild
    finally:
        started = time.perf_counter()
        idle: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
        connections = [writer_connection() for _ in range(builders)]
        for builder in connections:
            # More memory to sort in than the server's default: the build's, not the app's.
            builder.execute("SET maintenance_work_mem = '512MB'")
            idle.put(builder)

        def build(definition: str) -> None:
            builder = idle.get()
            try:
                builder.execute(definition)
            finally:
                idle.put(builder)

        try:
            with ThreadPoolExecutor(max_workers=builders) as pool:
                for done in [pool.submit(build, sql) for _, sql in rebuild.indexes]:
                    done.result()
        finally:
            for builder in connections:
                builder.close()
        rebuild.seconds = time.perf_counter() - started
        after = pg.execute(_SECONDARY_INDEXES, [list(BIG_TABLES)]).fetchall()
        if sorted(after) != sorted(rebuild.indexes):
            raise RuntimeError(f"indexes differ after the load: {after} != {rebuild.indexes}")
