"""A generation worker: django-tasks-db's db_worker on every queue, plus a lease reaper."""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from transcripts.generation.worker import reap_expired_runs

logger = logging.getLogger(__name__)
REAP_EVERY_SECONDS = 5.0


def _reap_forever(stop: threading.Event) -> None:
    while not stop.wait(REAP_EVERY_SECONDS):
        try:
            close_old_connections()
            expired = reap_expired_runs()
            if expired:
                logger.warning("failed %d run(s) whose worker died: %s", len(expired), expired)
        except Exception:
            logger.exception("lease reaper failed; retrying")
    connection.close()


class Command(DbWorkerCommand):
    help = "Run a Transcripts worker: generates queued runs and fails runs of dead workers."

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("queue_name") == "default":
            options["queue_name"] = "*"
        stop = threading.Event()
        reaper = threading.Thread(target=_reap_forever, args=(stop,), daemon=True)
        reaper.start()
        try:
            super().handle(*args, **options)
        finally:
            stop.set()
