"""Reads of the generator jobs API (`api/generator_jobs.py`): runs by status for the stream
layers outside the app (the `external` generator) to take."""

from __future__ import annotations

from django.db.models import QuerySet

from transcripts.models import Run


def runs_by_status(status: str, generator: str | None = None) -> QuerySet[Run]:
    """Runs with status (of generator, when given), oldest first."""
    runs = Run.objects.filter(status=status)
    if generator:
        runs = runs.filter(generator=generator)
    return runs.order_by("created_at")


def first_runs(runs: QuerySet[Run], limit: int) -> list[Run]:
    """The first limit runs of runs (a query runs_by_status began and the caller narrowed)."""
    return list(runs[:limit])
