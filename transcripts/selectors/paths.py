"""Reads of paths through a thread's tree: the active path, the path to a message, below it."""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet
from ulid import ULID

from transcripts.fields import to_uuid
from transcripts.models import Message, Thread

# The child a branch continues through below message `d`: children of committed runs first,
# then the newest. Shared by latest_leaf_below and the views' branch windows.
NEXT_CHILD_SQL = """
    SELECT m.id FROM transcripts_message m
    JOIN transcripts_run r ON r.id = m.run_id
    WHERE m.parent_id = d.id
    ORDER BY (r.status = 'committed') DESC, m.id DESC
    LIMIT 1
"""


def active_path(thread: Thread) -> QuerySet[Message]:
    """The thread's active messages, root first."""
    return Message.objects.filter(thread=thread, active=True).order_by("depth")


def path_ids_to(leaf_id: str) -> list[str]:
    """Ids of the messages from the root down to leaf_id (one indexed lookup per level)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE path AS (
                SELECT id, parent_id, depth FROM transcripts_message WHERE id = %s
                UNION ALL
                SELECT m.id, m.parent_id, m.depth
                FROM transcripts_message m JOIN path p ON m.id = p.parent_id
            )
            SELECT id FROM path ORDER BY depth
            """,
            [to_uuid(leaf_id)],
        )
        return [str(ULID.from_uuid(row[0])) for row in cursor.fetchall()]


def path_to(leaf: Message) -> list[Message]:
    """The messages from the root down to leaf, root first."""
    if leaf.active:
        return list(active_path(leaf.thread).filter(depth__lte=leaf.depth))
    ids = path_ids_to(leaf.id)
    by_id = {m.id: m for m in Message.objects.filter(pk__in=ids)}
    return [by_id[i] for i in ids]


def latest_leaf_below(message_id: str) -> str:
    """Follow the most recent committed child from message_id down to a leaf."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE down AS (
                SELECT %(start)s::uuid AS id, 0 AS n
                UNION ALL
                SELECT c.id, d.n + 1 FROM down d CROSS JOIN LATERAL ({NEXT_CHILD_SQL}) c
            )
            SELECT id FROM down ORDER BY n DESC LIMIT 1
            """,
            {"start": to_uuid(message_id)},
        )
        row = cursor.fetchone()
    return str(ULID.from_uuid(row[0])) if row else message_id
