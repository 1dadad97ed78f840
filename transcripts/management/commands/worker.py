"""`manage.py worker`: a Transcripts worker (transcripts.worker.process), with db_worker's
options."""

from __future__ import annotations

from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from transcripts.worker.process import run_worker


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
        **options: object,
    ) -> None:
        self.configure_logging(verbosity)
        run_worker(
            queue_name=queue_name,
            interval=interval,
            batch=batch,
            backend_name=backend_name,
            startup_delay=startup_delay,
            reload=reload,
            max_tasks=max_tasks,
            worker_id=worker_id,
            exclude_queues=exclude_queues,
        )
