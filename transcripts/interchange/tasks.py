"""Imports too large for a request: queued with their stored upload, and the task a worker runs
for them (Django Tasks API; see `transcripts.worker`)."""

from __future__ import annotations

from typing import IO

from django.db import transaction
from django_tasks import task

from transcripts.formats.zips import is_zip
from transcripts.interchange.imports import resolve_format
from transcripts.interchange.jobs import run_import_job
from transcripts.ledger.import_jobs import create_import_job
from transcripts.models import ImportJob, Project
from transcripts.permissions import User


def queue_import(
    *,
    content: IO[bytes],
    filename: str,
    size: int,
    fmt: str | None,
    project: Project,
    user: User | None = None,
) -> ImportJob:
    """Store an upload for project and queue it for a worker; the job reports its progress."""
    if fmt:
        resolve_format(None, fmt)
    head = content.read(4)
    content.seek(0)
    with transaction.atomic():
        job = create_import_job(
            project=project,
            user=user,
            fmt=fmt or "",
            filename=filename,
            size=size,
            content=content,
            suffix="zip" if is_zip(head) else "json",
        )
        transaction.on_commit(lambda: import_file.enqueue(job.id))
    return job


@task()
def import_file(job_id: str) -> str:
    """Import an uploaded file too large to import within the request."""
    return str(run_import_job(job_id).status)
