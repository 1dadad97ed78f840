"""django-tasks' result rows (DBTaskResult), the only place outside django-tasks that writes
them: the running rows of workers that died are given back (queued again) or, after too many
attempts, failed."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from transcripts.errors import WorkerLost

logger = logging.getLogger("transcripts.worker.liveness")

# A task whose workers died this many times is failed instead of queued again: it may be what
# kills them.
MAX_ATTEMPTS = 3
WORKER_LOST = f"{WorkerLost.__module__}.{WorkerLost.__qualname__}"


def release_rows_of(workers: set[str], why: str) -> list[str]:
    """Queue again (or, after MAX_ATTEMPTS, fail) the running task rows last claimed by one of
    workers; returns the ids of the rows released."""
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
                _fail(row, why)
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


def _fail(row: DBTaskResult[..., object], why: str) -> None:
    """Fail row for good: its workers died MAX_ATTEMPTS times."""
    row.status = TaskResultStatus.FAILED
    row.finished_at = timezone.now()
    row.exception_class_path = WORKER_LOST
    row.traceback = f"{WORKER_LOST}: {why}, {len(row.worker_ids)} times; not tried again\n"
    row.save(update_fields=["status", "finished_at", "exception_class_path", "traceback"])
