"""Reads for the live pages: one thread of a filtered list (a row the list re-fetches)."""

from __future__ import annotations

from django.db.models import QuerySet

from transcripts.ids import is_ulid
from transcripts.models import Run, Thread


def only_thread(threads: QuerySet[Thread], thread_id: str) -> list[Thread]:
    """The thread thread_id if the filtered queryset threads holds it (else nothing): what a
    live list shows of a thread it was told about, so its filters and search still apply."""
    if not is_ulid(thread_id):
        return []
    return list(threads.filter(pk=thread_id)[:1])


def committed_leaf(run: Run) -> tuple[str | None, bool]:
    """Where a committed run left its branch: its last message's id (None if it made none) and
    whether that message is on the thread's active branch."""
    last = run.messages.order_by("-position").values_list("pk", "active").first()
    return (None, False) if last is None else (str(last[0]), bool(last[1]))
