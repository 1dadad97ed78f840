"""Imports too large for a request: stored, queued, and imported by a worker with progress."""

from __future__ import annotations

import logging
import time
from typing import IO, Any, BinaryIO, cast

from django.core.files import File
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from transcripts.errors import DomainError
from transcripts.formats.zips import is_zip
from transcripts.ids import to_uuid
from transcripts.interchange.imports import import_stream, resolve_format
from transcripts.models import ImportJob, ImportStatus, Project

logger = logging.getLogger(__name__)


def queue_import(
    *,
    content: IO[bytes],
    filename: str,
    size: int,
    fmt: str | None,
    project: Project,
    user: Any = None,
) -> ImportJob:
    """Store an upload for project and queue it for a worker; the job reports its progress."""
    if fmt:
        resolve_format(None, fmt)
    job = ImportJob(
        project=project,
        user=user if getattr(user, "is_authenticated", False) else None,
        format=fmt or "",
        filename=filename[:300],
        size=size,
    )
    head = content.read(4)
    content.seek(0)
    job.file.save(f"{job.id}.{'zip' if is_zip(head) else 'json'}", File(content), save=False)
    with transaction.atomic():
        job.save(force_insert=True)
        from transcripts.generation import tasks

        transaction.on_commit(lambda: tasks.import_file.enqueue(job.id))
    return job


def run_import_job(job_id: str) -> ImportJob:
    """The worker's side of queue_import: import the stored file, recording progress."""
    job = ImportJob.objects.get(pk=job_id)
    if job.status != ImportStatus.QUEUED:
        return job
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING)
    last_update = 0.0
    # The import is one transaction: progress goes through a connection of its own, so the
    # poller sees it before the import commits.
    progress_db = connections.create_connection(DEFAULT_DB_ALIAS)
    with job.file.open("rb") as handle:

        def progress(count: int) -> None:
            nonlocal last_update
            now = time.monotonic()
            if now - last_update >= 0.5:
                last_update = now
                with progress_db.cursor() as cursor:
                    cursor.execute(
                        f"UPDATE {ImportJob._meta.db_table} SET bytes_done = %s WHERE id = %s",
                        [handle.tell(), to_uuid(job.pk)],
                    )

        try:
            result = import_stream(
                cast(BinaryIO, handle),
                job.format or None,
                project=job.project,
                progress=progress,
            )
        except DomainError as exc:
            job.status = ImportStatus.FAILED
            job.error = {"code": exc.code, "message": exc.message, "details": exc.details}
        except Exception:
            # Never leave a job "running" forever: the poller learns it failed.
            logger.exception("import job %s failed", job.pk)
            job.status = ImportStatus.FAILED
            job.error = {"code": "internal", "message": "the import failed", "details": {}}
        else:
            job.status = ImportStatus.DONE
            job.format = result.format
            job.thread_ids = result.thread_ids
            job.report = result.report
            job.bytes_done = job.size
        finally:
            progress_db.close()
    job.finished_at = timezone.now()
    job.save(
        update_fields=[
            "status",
            "format",
            "thread_ids",
            "report",
            "bytes_done",
            "error",
            "finished_at",
        ]
    )
    job.file.delete(save=False)
    return job
