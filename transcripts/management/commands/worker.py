"""A generation worker: django-tasks-db's db_worker on every queue, kept alive through database
outages, with a liveness row renewed in the background and a periodic sweeper."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import Error as DatabaseLayerError
from django.db import close_old_connections, connection
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.management.commands.db_worker import Worker

from transcripts.outage import Backoff, describe, forget_connection, is_outage
from transcripts.worker.liveness import Liveness, beat_seconds, release_own_tasks
from transcripts.worker.process import sweep

logger = logging.getLogger(__name__)


def _sweep_forever(stop: threading.Event, liveness: Liveness) -> None:
    purge_every = float(getattr(settings, "TRANSCRIPTS_PURGE_EVERY_SECONDS", 3600))
    every = beat_seconds()
    next_purge = time.monotonic() + every
    while not stop.wait(every):
        try:
            close_old_connections()
            purge = time.monotonic() >= next_purge
            # Back from an outage, the other workers have not beaten yet: judge them only
            # after a whole lease of this one's own beats.
            done = sweep(purge=purge, release=liveness.may_judge_others())
            if purge:
                next_purge = time.monotonic() + purge_every
            if done.expired:
                logger.warning(
                    "failed %d run(s) whose worker died: %s", len(done.expired), done.expired
                )
            for purged in done.purges:
                if purged.deleted.threads:
                    logger.warning(
                        "retention of %s deleted %s", purged.project.slug, purged.deleted.as_dict()
                    )
        except Exception as exc:
            if is_outage(exc):
                logger.warning("sweep skipped: the database is unavailable (%s)", describe(exc))
                forget_connection()
            else:
                logger.exception("sweep failed; retrying")
    connection.close()


class ResilientWorker(Worker):
    """db_worker's loop, kept running through database errors: it waits (with backoff) and
    carries on, gives back a task row a failure left running, beats and sweeps alongside."""

    def run(self) -> None:
        liveness = Liveness(self.worker_id)
        stop = threading.Event()
        sweeper = threading.Thread(
            target=_sweep_forever, args=(stop, liveness), name="sweeper", daemon=True
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


class Command(DbWorkerCommand):
    help = (
        "Run a Transcripts worker: generates queued runs, fails runs of dead workers and gives"
        " back their tasks, stores snapshots of long open runs and applies the projects'"
        " retention periods (hourly). Database outages are waited out, not fatal."
    )

    def handle(  # type: ignore[override]
        self,
        *,
        verbosity: int,
        queue_name: str,
        interval: float,
        batch: bool,
        backend_name: str,
        startup_delay: bool,
        reload: bool,
        max_tasks: int | None,
        worker_id: str,
        exclude_queues: str,
        **options: Any,
    ) -> None:
        # db_worker's handle(), with a worker that survives the database going away.
        self.configure_logging(verbosity)
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
