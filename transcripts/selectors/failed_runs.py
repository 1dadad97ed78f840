"""Reads of failed generations a conversation still shows: a run that failed at a fork point
and was followed there by nothing (no retry, no other run)."""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Q

from transcripts.models import Run, RunStatus, Thread


def unanswered_failures(thread: Thread, fork_ids: Collection[str], *, root: bool) -> list[Run]:
    """The failed runs of thread that are the latest run forked from one of fork_ids (or from
    the thread's start, when root): each fork point's newest run, kept only when it failed.
    One query (the run_fork_point_idx index), oldest fork point first as fork_ids go."""
    if not fork_ids and not root:
        return []
    where = Q(fork_from_id__in=list(fork_ids))
    if root:
        where |= Q(fork_from__isnull=True)
    latest = (
        Run.objects.filter(where, thread=thread)
        .order_by("fork_from_id", "-created_at", "-id")
        .distinct("fork_from_id")
        .defer("snapshot")
    )
    return [run for run in latest if run.status == RunStatus.FAILED]
