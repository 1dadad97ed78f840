"""A generation worker: django-tasks-db's db_worker on every queue, plus a periodic sweeper."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from transcripts.generation.worker import sweep

logger = logging.getLogger(__name__)
SWEEP_EVERY_SECONDS = 5.0


def _sweep_forever(stop: threading.Event) -> None:
    purge_every = float(getattr(settings, "TRANSCRIPTS_PURGE_EVERY_SECONDS", 3600))
    next_purge = time.monotonic() + SWEEP_EVERY_SECONDS
    while not stop.wait(SWEEP_EVERY_SECONDS):
        try:
            close_old_connections()
            purge = time.monotonic() >= next_purge
            done = sweep(purge=purge)
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
        except Exception:
            logger.exception("sweep failed; retrying")
    connection.close()


class Command(DbWorkerCommand):
    help = (
        "Run a Transcripts worker: generates queued runs, fails runs of dead workers, stores"
        " snapshots of long open runs and applies the projects' retention periods (hourly)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("queue_name") == "default":
            options["queue_name"] = "*"
        stop = threading.Event()
        sweeper = threading.Thread(target=_sweep_forever, args=(stop,), daemon=True)
        sweeper.start()
        try:
            super().handle(*args, **options)
        finally:
            stop.set()
