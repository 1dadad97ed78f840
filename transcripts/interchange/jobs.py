"""Imports too large for a request, the worker's side: import the stored file of a queued job,
recording its progress and outcome (queued by `tasks.queue_import`)."""

from __future__ import annotations

import logging
import time
from typing import BinaryIO, cast

from transcripts.errors import DomainError
from transcripts.interchange.files import import_stream
from transcripts.interchange.limits import job_memory_bytes, memory_cap, too_much_memory
from transcripts.ledger.import_jobs import ProgressRecorder, finish_import_job, mark_running
from transcripts.models import ImportJob, ImportStatus

logger = logging.getLogger(__name__)


def run_import_job(job_id: str) -> ImportJob:
    """The worker's side of queue_import: import the stored file, recording progress."""
    job = ImportJob.objects.get(pk=job_id)
    if job.status != ImportStatus.QUEUED:
        return job
    mark_running(job)
    last_update = 0.0
    recorder = ProgressRecorder(job)
    with job.file.open("rb") as handle:

        def progress(count: int) -> None:
            nonlocal last_update
            now = time.monotonic()
            if now - last_update >= 0.5:
                last_update = now
                recorder.record(handle.tell())

        budget = job_memory_bytes()
        try:
            with memory_cap(budget):
                result = import_stream(
                    cast(BinaryIO, handle),
                    job.format or None,
                    project=job.project,
                    progress=progress,
                )
        except MemoryError:
            # The cap was lifted on the way out: there is memory again to record the failure.
            _failed(job, too_much_memory(budget))
        except DomainError as exc:
            _failed(job, exc)
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
            recorder.close()
    finish_import_job(job)
    job.file.delete(save=False)
    return job


def _failed(job: ImportJob, exc: DomainError) -> None:
    """Mark job failed with the refusal the poller shows."""
    job.status = ImportStatus.FAILED
    job.error = {"code": exc.code, "message": exc.message, "details": exc.details}
