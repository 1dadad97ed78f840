"""Import jobs (large imports a worker runs): created with their stored upload, marked running,
their progress recorded while the import's own transaction is still open, and their outcome."""

from __future__ import annotations

from typing import IO

from django.core.files import File
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from transcripts.ids import to_uuid
from transcripts.ledger.rights import account_of
from transcripts.models import ImportJob, ImportStatus, Project
from transcripts.permissions import User

# What an outcome sets on the job, as finish_import_job saves it.
OUTCOME_FIELDS = ["status", "format", "thread_ids", "report", "bytes_done", "error", "finished_at"]


def create_import_job(
    *,
    project: Project,
    user: User | None,
    fmt: str,
    filename: str,
    size: int,
    content: IO[bytes],
    suffix: str,
) -> ImportJob:
    """A queued job of project, its upload stored as `<job id>.<suffix>`; user (when logged in)
    is who uploaded it."""
    job = ImportJob(
        project=project,
        user=account_of(user),
        format=fmt,
        filename=filename[:300],
        size=size,
    )
    job.file.save(f"{job.id}.{suffix}", File(content), save=False)
    job.save(force_insert=True)
    return job


def mark_running(job: ImportJob) -> None:
    """The worker has started job."""
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING)


class ProgressRecorder:
    """Records how many bytes of job's file are read, through a database connection of its own:
    the import is one transaction, and the poller must see progress before it commits."""

    def __init__(self, job: ImportJob) -> None:
        self._job_id = to_uuid(job.pk)
        self._db = connections.create_connection(DEFAULT_DB_ALIAS)

    def record(self, bytes_done: int) -> None:
        """Store bytes_done now (committed at once)."""
        with self._db.cursor() as cursor:
            cursor.execute(
                f"UPDATE {ImportJob._meta.db_table} SET bytes_done = %s WHERE id = %s",
                [bytes_done, self._job_id],
            )

    def close(self) -> None:
        """Release the connection."""
        self._db.close()


def finish_import_job(job: ImportJob) -> None:
    """Save the outcome set on job (status, format, threads, report or error), finished now."""
    job.finished_at = timezone.now()
    job.save(update_fields=OUTCOME_FIELDS)
