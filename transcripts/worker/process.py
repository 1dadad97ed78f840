"""The worker process: django-tasks-db's claim loop on every queue, kept running through
database outages, with its liveness row renewed in the background and a sweeper alongside.
`manage.py worker` runs it; the task bodies are the services' (`generation.tasks`,
`interchange.tasks`)."""

from __future__ import annotations

import logging
import os
import threading
import time

from django.core.management.base import CommandError
from django.db import Error as DatabaseLayerError
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands.db_worker import Worker

from transcripts.db_availability import Backoff, describe, forget_connection, is_outage
from transcripts.worker.liveness import Liveness, release_own_tasks
from transcripts.worker.sweeps import sweep_forever

logger = logging.getLogger(__name__)


class ResilientWorker(Worker):
    """db_worker's loop, kept running through database errors: it waits (with backoff) and
    carries on, gives back a task row a failure left running, beats and sweeps alongside."""

    def run(self) -> None:
        liveness = Liveness(self.worker_id)
        stop = threading.Event()
        sweeper = threading.Thread(
            target=sweep_forever, args=(stop, liveness), name="sweeper", daemon=True
        )
        backoff = Backoff()
        failing_since: float | None = None
        started = False
        try:
            while self.running:
                try:
                    # Beat before the first claim: a row this worker claims is never one
                    # whose worker has no sign of life to be judged by.
                    liveness.beat()
                    if failing_since is not None:
                        release_own_tasks(self.worker_id)
                        logger.warning(
                            "worker %s: the database is back after %.1f s; resuming",
                            liveness.name,
                            time.monotonic() - failing_since,
                        )
                        failing_since = None
                    if not started:
                        liveness.start()
                        sweeper.start()
                        started = True
                    super().run()
                    return
                except DatabaseLayerError as exc:
                    if failing_since is None:
                        failing_since = time.monotonic()
                        logger.warning(
                            "worker %s: database error (%s); trying again until it answers",
                            liveness.name,
                            describe(exc),
                            # Not an outage (a missing table, a bug): the trace says where.
                            exc_info=not is_outage(exc),
                        )
                    self.startup_delay = False
                    forget_connection()
                    time.sleep(backoff.next_delay())
        finally:
            stop.set()
            liveness.stop()
            if started:
                sweeper.join(timeout=5)


def run_worker(
    *,
    queue_name: str,
    interval: float,
    batch: bool,
    backend_name: str,
    startup_delay: bool,
    reload: bool,
    max_tasks: int | None,
    worker_id: str,
    exclude_queues: str,
) -> None:
    """db_worker's handle() with db_worker's options, running a ResilientWorker."""
    if reload and batch:
        logger.warning("--reload and --batch cannot be used together: not reloading")
        reload = False
    queue_names = ["*"] if queue_name == "default" else queue_name.split(",")
    excluded = exclude_queues.split(",") if exclude_queues else []
    if excluded and "*" not in queue_names:
        raise CommandError("--exclude-queues can only be used with --queue-name=*")
    worker = ResilientWorker(
        queue_names=queue_names,
        interval=interval,
        batch=batch,
        backend_name=backend_name,
        startup_delay=startup_delay,
        max_tasks=max_tasks,
        worker_id=worker_id,
        excluded_queue_names=excluded,
    )
    if reload:
        if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            worker.configure_signals()
        run_with_reloader(worker.run)
    else:
        worker.configure_signals()
        worker.run()
