"""Reads: querysets and lists for the API, the views and the admin. Nothing here writes."""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from ulid import ULID

from transcripts.fields import to_uuid
from transcripts.models import Message, Run, Thread


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


def visible_threads(*, include_hidden: bool = False) -> QuerySet[Thread]:
    """Threads a reader may see: hidden ones only for staff."""
    threads = Thread.objects.all()
    return threads if include_hidden else threads.filter(hidden=False)


def search_threads(threads: QuerySet[Thread], query: str) -> QuerySet[Thread]:
    """Threads whose title or any message on any branch matches query (full-text)."""
    query = query.strip()
    if not query:
        return threads
    search = SearchQuery(query, config="simple", search_type="websearch")
    hits = Message.objects.filter(thread_id=OuterRef("pk"), search=search)
    return threads.filter(Exists(hits) | Q(title__icontains=query))


def runs_at_fork_point(thread: Thread, fork_from_id: str | None) -> QuerySet[Run]:
    """Every run that forked from the given message (None: new roots), newest first."""
    return Run.objects.filter(thread=thread, fork_from_id=fork_from_id).order_by("-created_at")
