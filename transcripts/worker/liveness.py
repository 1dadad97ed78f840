"""Worker liveness: every worker process renews a row (WorkerBeat) every few seconds, and a
live worker gives back the task rows of workers that stopped renewing theirs for longer than
the lease (killed, crashed, cut off), so a task claimed by a dead worker runs on another one.

Rows claimed by processes that never beat (a bare `manage.py db_worker`) are left alone: with
no sign of life to go by, they cannot be told dead.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from transcripts.errors import WorkerLost
from transcripts.models import WorkerBeat
from transcripts.outage import describe, forget_connection

logger = logging.getLogger(__name__)

# A task whose workers died this many times is failed instead of queued again: it may be what
# kills them.
MAX_ATTEMPTS = 3
# Rows of workers gone this long are deleted (their task rows were released long before).
FORGET_AFTER = timedelta(days=1)
WORKER_LOST = f"{WorkerLost.__module__}.{WorkerLost.__qualname__}"


def lease_seconds() -> float:
    """How long a worker's lease (on a run, and on its own liveness) lasts without renewal."""
    return float(getattr(settings, "TRANSCRIPTS_LEASE_SECONDS", 30))


def beat_seconds() -> float:
    """How often a worker renews its liveness row: several times per lease."""
    return min(5.0, lease_seconds() / 3)


def worker_name() -> str:
    """This process's worker identity, as its leases carry it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def record_beat(*, worker_id: str, name: str) -> None:
    """Renew worker_id's liveness row (created on its first beat), on the database's clock."""
    if not WorkerBeat.objects.filter(pk=worker_id).update(seen_at=Now(), name=name):
        WorkerBeat.objects.create(worker_id=worker_id, name=name)


def _seen_before(seconds: float | timedelta) -> ExpressionWrapper[CombinedExpression]:
    age = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
    return ExpressionWrapper(Now() - age, output_field=DateTimeField())


def release_tasks_of_dead_workers() -> list[str]:
    """Give back the running task rows of workers not seen for longer than the lease; returns
    the ids of the task rows released."""
    dead = set(
        WorkerBeat.objects.filter(seen_at__lt=_seen_before(lease_seconds())).values_list(
            "worker_id", flat=True
        )
    )
    if not dead:
        return []
    released = _release(dead, "its worker stopped (not seen for longer than the lease)")
    WorkerBeat.objects.filter(seen_at__lt=_seen_before(FORGET_AFTER)).delete()
    return released


def release_own_tasks(worker_id: str) -> list[str]:
    """Give back the task rows worker_id left running when the database failed under it."""
    return _release({worker_id}, "its worker lost the database while running it")


def _release(workers: set[str], why: str) -> list[str]:
    """Queue again (or, after MAX_ATTEMPTS, fail) the running task rows last claimed by one of
    workers."""
    released: list[str] = []
    with transaction.atomic():
        # Few rows run at once (one per worker); SKIP LOCKED leaves a row being finished alone.
        running = DBTaskResult.objects.select_for_update(skip_locked=True).filter(
            status=TaskResultStatus.RUNNING
        )
        for row in running:
            if not row.worker_ids or row.worker_ids[-1] not in workers:
                continue
            if len(row.worker_ids) >= MAX_ATTEMPTS:
                row.status = TaskResultStatus.FAILED
                row.finished_at = timezone.now()
                row.exception_class_path = WORKER_LOST
                row.traceback = (
                    f"{WORKER_LOST}: {why}, {len(row.worker_ids)} times; not tried again\n"
                )
                row.save(
                    update_fields=["status", "finished_at", "exception_class_path", "traceback"]
                )
            else:
                row.status = TaskResultStatus.READY
                row.save(update_fields=["status"])
            logger.warning(
                "task %s (%s) of worker %s: %s; %s",
                row.id,
                row.task_path,
                row.worker_ids[-1],
                why,
                "failed" if row.status == TaskResultStatus.FAILED else "queued again",
            )
            released.append(str(row.id))
    return released


class Liveness:
    """This worker process's heartbeat: its row renewed every beat_seconds() from a thread of
    its own, so a long task or a long sweep never makes it look dead."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self.name = worker_name()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._steady_since: float | None = None

    def beat(self) -> None:
        """Renew the row now (raises the database's error when it cannot)."""
        try:
            record_beat(worker_id=self.worker_id, name=self.name)
        except Exception:
            self._steady_since = None
            raise
        if self._steady_since is None:
            self._steady_since = time.monotonic()

    def steady_for(self) -> float:
        """Seconds this worker has been beating without a miss (0 while it cannot)."""
        since = self._steady_since
        return 0.0 if since is None else time.monotonic() - since

    def may_judge_others(self) -> bool:
        """Whether this worker has beaten for a whole lease: only then has every other live
        worker (back from the same outage) had the time to beat too."""
        return self.steady_for() >= lease_seconds()

    def start(self) -> None:
        """Beat in the background until stop()."""
        self._thread = threading.Thread(target=self._run, name="liveness", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(beat_seconds()):
            try:
                self.beat()
            except Exception as exc:
                if not failing:
                    logger.warning("worker %s could not beat: %s", self.name, describe(exc))
                failing = True
                forget_connection()
            else:
                failing = False
        connection.close()
