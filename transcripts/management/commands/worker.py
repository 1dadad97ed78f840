"""A generation worker: django-tasks-db's db_worker on every queue, plus a periodic sweeper."""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from transcripts.generation.worker import sweep

logger = logging.getLogger(__name__)
SWEEP_EVERY_SECONDS = 5.0


def _sweep_forever(stop: threading.Event) -> None:
    while not stop.wait(SWEEP_EVERY_SECONDS):
        try:
            close_old_connections()
            done = sweep()
            if done.expired:
                logger.warning(
                    "failed %d run(s) whose worker died: %s", len(done.expired), done.expired
                )
        except Exception:
            logger.exception("sweep failed; retrying")
    connection.close()


class Command(DbWorkerCommand):
    help = (
        "Run a Transcripts worker: generates queued runs, fails runs of dead workers and"
        " stores snapshots of long open runs."
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
