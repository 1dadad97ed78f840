"""The reads of a streamed export (issue 30): a thread's messages and runs in keyset batches.

Memory holds one batch, never the thread, and no cursor outlives its query: each batch is
one plain SELECT ... LIMIT after the last row of the one before, so a pooler in transaction
mode (PgBouncer) or a server-side-cursor setting changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import TextField
from django.db.models.functions import Cast

from transcripts.models import Message, Run, Thread
from transcripts.pagination import Keyset

# A message as an export writes it: id, parent id, role, parts, created_at as PostgreSQL's
# text, metadata, depth (the keyset's key).
MessageRow = tuple[str, str | None, str, Any, str, Any, int]

_BY_DEPTH = Keyset("depth")
_BY_CREATION = Keyset("created_at")
_RUN_FIELDS = (
    "id", "status", "fork_from_id", "superseded_by_id", "generator", "model", "parameters",
    "metadata", "usage", "error", "created_text", "finished_text", "last_seq", "created_at",
)  # fmt: skip


def is_message_of(thread: Thread, message_id: str) -> bool:
    """Whether message_id (spelled as the export spells ids) names a message of thread."""
    try:
        found = Message.objects.filter(thread=thread, id=message_id).values_list("id", flat=True)
        return found.first() == message_id
    except ValidationError:  # not a ULID at all
        return False


def message_batches(thread: Thread, size: int) -> Iterator[list[MessageRow]]:
    """The thread's messages, parents before children (by depth, then id), size at a time."""
    rows = (
        Message.objects.filter(thread=thread)
        .annotate(created_text=Cast("created_at", TextField()))
        .order_by(*_BY_DEPTH.order)
        .values_list("id", "parent_id", "role", "parts", "created_text", "metadata", "depth")
    )
    page = rows
    while batch := list(page[:size]):
        yield batch
        if len(batch) < size:
            return
        last = batch[-1]
        page = rows.filter(_BY_DEPTH.after((last[6], last[0])))


def run_batches(thread: Thread, size: int) -> Iterator[list[dict[str, Any]]]:
    """The thread's runs, oldest first, size at a time (no snapshot: no export writes it)."""
    rows = (
        Run.objects.filter(thread=thread)
        .annotate(
            created_text=Cast("created_at", TextField()),
            finished_text=Cast("finished_at", TextField()),
        )
        .order_by(*_BY_CREATION.order)
        .values(*_RUN_FIELDS)
    )
    page = rows
    while batch := list(page[:size]):
        yield batch
        if len(batch) < size:
            return
        last = batch[-1]
        page = rows.filter(_BY_CREATION.after((last["created_at"], last["id"])))


def run_message_ids(thread: Thread, run_ids: list[str]) -> dict[str, list[str]]:
    """The ids of each run's messages, in the run's order (one query for the runs)."""
    found: dict[str, list[str]] = {}
    rows = (
        Message.objects.filter(thread=thread, run_id__in=run_ids)
        .order_by("run_id", "position", "id")
        .values_list("run_id", "id")
    )
    for run_id, message_id in rows:
        found.setdefault(run_id, []).append(message_id)
    return found
