"""Whether the database is available: what counts as an outage (as opposed to a refusal of one
statement), how to say what went wrong, and how to wait one out.

Plain infrastructure: no HTTP here. The middleware that answers requests 503 during an outage
is `transcripts.outage`; the worker and the live stream wait with `patiently` and `Backoff`.
A pool with no connection free while the database answers is not an outage but a busy
process (`is_busy`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import Error, InterfaceError, connection, connections
from psycopg_pool import PoolTimeout

logger = logging.getLogger("transcripts.outage")
T = TypeVar("T")

# SQLSTATEs of a server that cannot serve anyone right now (shutting down, crashed, starting
# up, out of connections), as opposed to refusing one statement.
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# What a hot standby answers when it cancels a query for the WAL it must replay (a snapshot,
# lock or buffer-pin conflict; 57P04 when the database was dropped): the same read succeeds on
# the primary, which has nothing to replay.
RECOVERY_CONFLICT_STATES = frozenset({"40001", "40P01", "57P04"})
# Keys of Django's OPTIONS that are not libpq connection parameters.
_DJANGO_ONLY_OPTIONS = frozenset({"isolation_level", "server_side_binding", "pool", "assume_role"})


def _cause(exc: BaseException) -> BaseException:
    """The driver's exception behind Django's wrapper of it."""
    if isinstance(exc, Error) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def is_outage(exc: BaseException) -> bool:
    """Whether exc means the database cannot be reached or cannot serve (down, restarting,
    cut off, no connection to be had), rather than a refusal of one statement."""
    cause = _cause(exc)
    if isinstance(cause, psycopg.InterfaceError):
        return True
    if isinstance(cause, psycopg.OperationalError):
        # Failures to connect or to stay connected come from libpq itself, with no SQLSTATE.
        state = cause.sqlstate
        return state is None or state.startswith("08") or state in _UNAVAILABLE_STATES
    return isinstance(exc, InterfaceError)


def is_recovery_conflict(exc: BaseException) -> bool:
    """Whether exc is a standby cancelling a query for a conflict with recovery."""
    return getattr(_cause(exc), "sqlstate", None) in RECOVERY_CONFLICT_STATES


def describe(exc: BaseException) -> str:
    """What went wrong, in one line, without the server's address."""
    cause = _cause(exc)
    text = str(cause).strip()
    first_line = text.splitlines()[0] if text else type(cause).__name__
    # libpq says 'connection to server on socket "/path" failed: Connection refused'.
    _, found, reason = first_line.rpartition("failed: ")
    return (reason if found else first_line).strip() or type(cause).__name__


def release_connections() -> None:
    """Hand this thread's database connections back (to the pool, when there is one): for a
    request that keeps running (a live stream) after its last query. A connection inside a
    transaction (a caller's atomic block, as in tests) is left alone: closing it would end
    the transaction."""
    for wrapper in connections.all(initialized_only=True):
        if not wrapper.in_atomic_block:
            wrapper.close()


class _DirectCheck:
    """Whether the database accepts a connection of its own (not from the pool), asked at most
    once per interval: the pool's timeout alone cannot tell a busy pool from a dead server."""

    def __init__(self, every_seconds: float) -> None:
        self.every_seconds = every_seconds
        self._checked_at = float("-inf")
        self._problem = ""
        self._lock = threading.Lock()

    def problem(self) -> str:
        """'' when a direct connection succeeds; else why not."""
        with self._lock:
            if time.monotonic() - self._checked_at >= self.every_seconds:
                try:
                    psycopg.connect(conninfo(), autocommit=True).close()
                    self._problem = ""
                except psycopg.Error as exc:
                    self._problem = describe(exc)
                self._checked_at = time.monotonic()
            return self._problem


_direct_check = _DirectCheck(every_seconds=1.0)


def is_busy(exc: BaseException) -> bool:
    """Whether exc is the pool running out of connections while the database answers: every
    pooled connection is in use (the process is busy), the database is not down."""
    return isinstance(_cause(exc), PoolTimeout) and not _direct_check.problem()


def forget_connection() -> None:
    """After an outage: drop this thread's connection and the pool's idle ones, so the next use
    connects afresh. A restart breaks every idle pooled connection, and psycopg_pool would find
    them one check at a time, pausing a second after the second one (a request's whole wait)."""
    with suppress(Exception):
        connection.close()
    pool = open_pool()
    if pool is not None:
        with suppress(Exception):
            pool.drain()


def open_pool() -> Any:
    """This process's connection pool, if it is open (a pool not opened yet must be left
    alone: psycopg_pool loses the work asked of it before it opens)."""
    pool = getattr(connection, "pool", None)
    return pool if pool is not None and not pool.closed else None


def conninfo() -> str:
    """libpq connection string of the default database (its timeouts included)."""
    db = settings.DATABASES["default"]
    params: dict[str, Any] = {
        "dbname": db.get("NAME") or None,
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    options = db.get("OPTIONS") or {}
    params.update({k: v for k, v in options.items() if k not in _DJANGO_ONLY_OPTIONS})
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v is not None})


class Backoff:
    """Pauses between attempts against a database that fails: doubling from `first` up to
    `most` seconds (with jitter, so workers do not come back in step), and from `first` again
    once `calm_after` seconds have passed without a failure."""

    def __init__(self, first: float = 0.25, most: float = 2.0, calm_after: float = 60.0) -> None:
        self.first, self.most, self.calm_after = first, most, calm_after
        self._failures = 0
        self._last_failure = float("-inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self.calm_after:
            self._failures = 0
        self._last_failure = now
        delay = min(self.most, self.first * 2**self._failures)
        self._failures += 1
        return float(delay * random.uniform(0.8, 1.2))


def patiently(action: Callable[[], T], *, what: str) -> T:
    """action(), tried again after a growing pause for as long as the database is unavailable
    (other errors are raised at once)."""
    backoff = Backoff()
    failing_since: float | None = None
    while True:
        try:
            result = action()
        except Error as exc:
            if not is_outage(exc):
                raise
            if failing_since is None:
                failing_since = time.monotonic()
                logger.warning(
                    "%s: the database is unavailable (%s); trying again until it answers",
                    what,
                    describe(exc),
                )
            forget_connection()
            time.sleep(backoff.next_delay())
        else:
            if failing_since is not None:
                waited = time.monotonic() - failing_since
                logger.warning("%s: the database is back after %.1f s", what, waited)
            return result


def database_problem() -> str:
    """'' when the database answers this process (a pool with no connection free meanwhile
    included: a busy process is still ready); else why not, in a line."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Error as exc:
        if isinstance(_cause(exc), PoolTimeout):
            # The pool only says it waited: ask the server directly whether it answers.
            return _direct_check.problem()
        forget_connection()
        return describe(exc)
    return ""
