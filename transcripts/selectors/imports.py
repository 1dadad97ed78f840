"""Reads of the import page: recent jobs and the threads an import made."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet

from transcripts.models import ImportJob, Thread


def latest_jobs(jobs: QuerySet[ImportJob], limit: int) -> list[ImportJob]:
    """The limit most recently started of jobs."""
    return list(jobs.order_by("-created_at")[:limit])


def imported_threads(threads: QuerySet[Thread], ids: Sequence[str], limit: int) -> list[Thread]:
    """The first limit of threads with these ids, oldest first."""
    return list(threads.filter(pk__in=ids).order_by("created_at")[:limit])
