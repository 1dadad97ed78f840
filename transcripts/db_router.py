"""Reads from a streaming replica, writes to the primary (DATABASE_REPLICA_URL).

Only a request that `read_your_writes.ReadYourWritesMiddleware` marks as a plain read (GET or
HEAD, not a live stream, from a client that has not written in the last few seconds) reads from
the replica. Everything else reads from the primary: other requests, workers, management
commands, reads inside a transaction, the rest of a request once it has written, and who may
read (sessions, users, tokens, memberships) in every request. When the replica does not
answer, reads fall back to the primary and the replica is left alone for a few seconds, so an
outage of the replica costs one failed connection attempt, never an error. A read the replica
fails mid-request (it went down, or cancelled the query for a conflict with the WAL it replays,
SQLSTATE 40001) is noted here, and `read_your_writes` serves that request again from the
primary.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, Error, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models import Model

from transcripts.db_availability import describe, is_outage, is_recovery_conflict

logger = logging.getLogger(__name__)

REPLICA_DB_ALIAS = "replica"
# Who may read is always decided on the primary: a revoked token, a deactivated user, an ended
# session or a removed member loses access at once, however far the replica lags behind.
ACCESS_MODELS = frozenset(
    {"sessions.session", "auth.user", "transcripts.apitoken", "transcripts.membership"}
)
# Writes a client never reads back: a token's last use (recorded on a GET, at most once a
# minute) must not send that client's reads to the primary.
BOOKKEEPING_MODELS = frozenset({"transcripts.apitoken"})


@dataclass
class ReadRouting:
    """What one request may read from: a mutable object, so a write seen in any thread the
    request runs in (asgiref copies the context into each) sends its later reads to the
    primary."""

    replica_allowed: bool
    wrote: bool = False
    replica_answers: bool | None = None
    # A read on the replica failed (see _watch_replica): the request is served again from the
    # primary, and the rest of this one reads from the primary too.
    replica_failed: bool = False

    @property
    def reads_replica(self) -> bool:
        """Whether the next read goes to the replica (checked on the first read)."""
        if not self.replica_allowed or self.wrote or self.replica_failed:
            return False
        if self.replica_answers is None:
            self.replica_answers = _replica.answers()
        return self.replica_answers


# None outside a request (workers, commands, tests): every read goes to the primary.
current_routing: ContextVar[ReadRouting | None] = ContextVar("current_routing", default=None)


class _ReplicaHealth:
    """Whether the replica takes connections; after a failure it is not tried again for
    TRANSCRIPTS_REPLICA_RETRY_SECONDS (one request pays for the failed attempt, not every one)."""

    def __init__(self) -> None:
        self._down_until = 0.0
        self._lock = threading.Lock()

    def answers(self) -> bool:
        if time.monotonic() < self._down_until:
            return False
        replica = connections[REPLICA_DB_ALIAS]
        try:
            # A pooled connection is checked by the pool as it is handed out
            # (CONN_HEALTH_CHECKS); without a pool, this connects.
            replica.ensure_connection()
        except Error as exc:
            self.mark_down(exc)
            with suppress(Error):
                replica.close()
            return False
        return True

    def mark_down(self, exc: BaseException) -> None:
        retry = float(getattr(settings, "TRANSCRIPTS_REPLICA_RETRY_SECONDS", 5.0))
        with self._lock:
            first = time.monotonic() >= self._down_until
            self._down_until = time.monotonic() + retry
        if first:
            logger.warning(
                "the read replica does not answer (%s): reading from the primary for %.0f s",
                describe(exc),
                retry,
            )


_replica = _ReplicaHealth()


# Django's execute wrapper protocol: the next wrapper (or the cursor's execution), the SQL, its
# parameters, whether it is an executemany, and the wrapper context (connection and cursor).
Execute = Callable[[str, object, bool, dict[str, object]], object]


def _watch_replica(
    execute: Execute, sql: str, params: object, many: bool, context: dict[str, object]
) -> object:
    """Execute wrapper of replica connections: a query the replica fails for its own reasons
    (down, cut off, in conflict with recovery) marks the request for a retry on the primary.
    Other errors (a bad query) would fail on the primary too and are left as they are."""
    try:
        return execute(sql, params, many, context)
    except Error as exc:
        routing = current_routing.get()
        down = is_outage(exc)
        if routing is not None and (down or is_recovery_conflict(exc)):
            routing.replica_failed = True
            if down:
                _replica.mark_down(exc)
            else:
                logger.warning(
                    "the read replica cancelled a read (%s): retrying on the primary", describe(exc)
                )
        raise


def _watch_replica_connections(
    sender: object, connection: BaseDatabaseWrapper, **kwargs: object
) -> None:
    if connection.alias == REPLICA_DB_ALIAS and _watch_replica not in connection.execute_wrappers:
        connection.execute_wrappers.append(_watch_replica)


connection_created.connect(_watch_replica_connections, dispatch_uid="transcripts.db_router")


class ReplicaRouter:
    """Django's database router: reads of plain read requests to the replica, the rest to the
    primary; migrations only on the primary."""

    def db_for_read(self, model: type[Model], **hints: object) -> str:
        routing = current_routing.get()
        if (
            routing is None
            or model._meta.label_lower in ACCESS_MODELS
            or connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return DEFAULT_DB_ALIAS
        return REPLICA_DB_ALIAS if routing.reads_replica else DEFAULT_DB_ALIAS

    def db_for_write(self, model: type[Model], **hints: object) -> str:
        routing = current_routing.get()
        if routing is not None and model._meta.label_lower not in BOOKKEEPING_MODELS:
            # Read your own writes: the rest of this request, and this client's requests for a
            # few seconds (the middleware's cookie), read from the primary.
            routing.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Model, obj2: Model, **hints: object) -> bool:
        # Both aliases hold the same data.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: object) -> bool:
        return db == DEFAULT_DB_ALIAS
