"""Worker liveness: every worker process renews a row (WorkerBeat) every few seconds, and a
live worker gives back the task rows of workers that stopped renewing theirs for longer than
the lease (killed, crashed, cut off), so a task claimed by a dead worker runs on another one.

Rows claimed by processes that never beat (a bare `manage.py db_worker`) are left alone: with
no sign of life to go by, they cannot be told dead.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.db import connection

from transcripts.db_availability import describe, forget_connection
from transcripts.generation.leases import lease_seconds, worker_name
from transcripts.ledger.task_rows import release_rows_of
from transcripts.ledger.worker_beats import forget_workers_gone_for, record_beat, seen_before
from transcripts.models import WorkerBeat

logger = logging.getLogger(__name__)

# Rows of workers gone this long are deleted (their task rows were released long before).
FORGET_AFTER = timedelta(days=1)


def beat_seconds() -> float:
    """How often a worker renews its liveness row: several times per lease."""
    return min(5.0, lease_seconds() / 3)


def release_tasks_of_dead_workers() -> list[str]:
    """Give back the running task rows of workers not seen for longer than the lease; returns
    the ids of the task rows released."""
    dead = set(
        WorkerBeat.objects.filter(
            seen_at__lt=seen_before(timedelta(seconds=lease_seconds()))
        ).values_list("worker_id", flat=True)
    )
    if not dead:
        return []
    released = release_rows_of(dead, "its worker stopped (not seen for longer than the lease)")
    forget_workers_gone_for(FORGET_AFTER)
    return released


def release_own_tasks(worker_id: str) -> list[str]:
    """Give back the task rows worker_id left running when the database failed under it."""
    return release_rows_of({worker_id}, "its worker lost the database while running it")


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
