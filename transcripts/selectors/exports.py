"""The reads of a streamed export (issue 30): a thread's messages and runs in batches.

First the order: the ids of the thread's messages (by depth, then id) and of its runs (by
creation), 16 bytes each, in one query apiece; then the rows themselves, a batch at a time by
primary key. Memory holds those ids and one batch, never the thread's text; no cursor outlives
its query (a pooler in transaction mode, PgBouncer, changes nothing); and each batch is an
index lookup, where a keyset on (depth, id) would scan the whole thread again for each batch
(no index has the thread, the depth and the id).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import BooleanField, OuterRef, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from transcripts.ids import to_uuid
from transcripts.models import Message, Run, Thread

# A message as an export writes it: id, parent id, role, parts, created_at as PostgreSQL's
# text, metadata.
MessageRow = tuple[str, str | None, str, Any, str, Any]

_RUN_FIELDS = (
    "id", "status", "fork_from_id", "superseded_by_id", "generator", "model", "parameters",
    "metadata", "usage", "error", "created_text", "finished_text", "last_seq", "message_ids",
)  # fmt: skip


def is_message_of(thread: Thread, message_id: str) -> bool:
    """Whether message_id (spelled as the export spells ids) names a message of thread."""
    try:
        found = Message.objects.filter(thread=thread, id=message_id).values_list("id", flat=True)
        return found.first() == message_id
    except ValidationError:  # not a ULID at all
        return False


def _order(table: type[Message] | type[Run], thread: Thread, *order: str) -> bytes:
    """The ids of thread's rows of table in order, 16 bytes each, as PostgreSQL joins them
    (one value: no Python object per row)."""
    name = table._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT string_agg(uuid_send(id), ''::bytea ORDER BY {', '.join(order)}) "
            f'FROM "{name}" WHERE thread_id = %s',
            [to_uuid(thread.id)],
        )
        row = cursor.fetchone()
    return bytes(row[0]) if row is not None and row[0] is not None else b""


def _batches(order: bytes, size: int) -> Iterator[str]:
    """The ids of order, size at a time, as one PostgreSQL uuid[] literal each: a single
    parameter (a thousand ids bound one by one cost more than the rows they fetch)."""
    step = 16 * size
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        yield "{" + ",".join(chunk[at : at + 16].hex() for at in range(0, len(chunk), 16)) + "}"


def _among(table: str, ids: str) -> RawSQL:
    """The rows of table whose id is in ids (a uuid[] literal), by primary key."""
    return RawSQL(f'"{table}"."id" = ANY(%s::uuid[])', [ids], output_field=BooleanField())


def message_batches(thread: Thread, size: int) -> Iterator[list[MessageRow]]:
    """The thread's messages, parents before children (by depth, then id), size at a time."""
    for ids in _batches(_order(Message, thread, "depth", "id"), size):
        yield list(
            Message.objects.filter(_among(Message._meta.db_table, ids))
            .order_by("depth", "id")
            .annotate(created_text=Cast("created_at", TextField()))
            .values_list("id", "parent_id", "role", "parts", "created_text", "metadata")
        )


def run_batches(thread: Thread, size: int) -> Iterator[list[dict[str, Any]]]:
    """The thread's runs, oldest first, size at a time, each with the ids of its messages in
    its order (`message_ids`); no snapshot (no export writes it)."""
    for ids in _batches(_order(Run, thread, "created_at", "id"), size):
        batch = list(
            Run.objects.filter(_among(Run._meta.db_table, ids))
            .order_by("created_at", "id")
            .annotate(
                created_text=Cast("created_at", TextField()),
                finished_text=Cast("finished_at", TextField()),
                message_ids=ArraySubquery(
                    Message.objects.filter(run=OuterRef("pk"))
                    .order_by("position", "id")
                    .values("id")
                ),
            )
            .values(*_RUN_FIELDS)
        )
        yield batch
