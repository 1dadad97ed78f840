"""Reads of a thread's tree and paths through it: the active path, the path to a message,
branch windows, siblings at fork points, and the whole tree for its map."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet
from django.db.models.expressions import RawSQL

from transcripts.ids import to_uuid, ulid_of
from transcripts.models import OPEN_STATUSES, Message, Run, RunStatus, Thread

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
        return [ulid_of(row[0]) for row in cursor.fetchall()]


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
    return ulid_of(row[0]) if row else message_id


def path_page(
    thread: Thread, *, leaf: Message | None, after_depth: int, limit: int
) -> list[Message]:
    """Up to limit messages of the active path (or of the path to leaf) below after_depth."""
    if leaf is None or leaf.active:
        path = active_path(thread).filter(depth__gt=after_depth)
        if leaf is not None:
            path = path.filter(depth__lte=leaf.depth)
        return list(path[:limit])
    ids = path_ids_to(leaf.id)[after_depth + 1 : after_depth + 1 + limit]
    by_id = {m.id: m for m in Message.objects.filter(pk__in=ids)}
    return [by_id[i] for i in ids]


def _window_messages() -> QuerySet[Message]:
    """Messages with just the run columns the conversation view shows.

    The runs come in a second query, by primary key, rather than joined: how the planner
    joins them depends on how many messages it expects of the thread, and with statistics
    older than the store (just after a large import) it expected hundreds and read every run
    of the store by a hash join. Apart, each query's plan is an index lookup whatever the
    statistics say.
    """
    runs = Run.objects.only("id", "status", "model", "generator")
    return Message.objects.only(
        *(f.name for f in Message._meta.concrete_fields if f.name != "search")
    ).prefetch_related(Prefetch("run", queryset=runs))


# Ancestors of the anchor (up to `before`) and its most recent descendants (up to `after`),
# following the rule of latest_leaf_below: committed children first, then the newest.
_BRANCH_WINDOW = f"""
    WITH RECURSIVE up(id, parent_id, n) AS (
        SELECT id, parent_id, 0 FROM transcripts_message WHERE id = %s
        UNION ALL
        SELECT m.id, m.parent_id, u.n + 1
        FROM transcripts_message m JOIN up u ON m.id = u.parent_id
        WHERE u.n < %s
    ), down(id, n) AS (
        SELECT %s::uuid, 0
        UNION ALL
        SELECT c.id, d.n + 1 FROM down d CROSS JOIN LATERAL ({NEXT_CHILD_SQL}) c
        WHERE d.n < %s
    )
    SELECT id FROM up UNION SELECT id FROM down
"""


def branch_window(anchor: Message, *, before: int, after: int) -> list[Message]:
    """The branch through anchor: up to `before` ancestors, anchor, up to `after` below it.

    Below the anchor the branch follows the most recent committed descendants. On the active
    path this is a depth range on the active index; elsewhere a recursive walk bounded by the
    window, so the cost never depends on the length of the thread.
    """
    messages = _window_messages().order_by("depth")
    if anchor.active:
        return list(
            messages.filter(
                thread_id=anchor.thread_id,
                active=True,
                depth__gte=max(anchor.depth - before, 0),
                depth__lte=anchor.depth + after,
            )
        )
    anchor_uuid = to_uuid(anchor.id)
    ids = RawSQL(_BRANCH_WINDOW, [anchor_uuid, before, anchor_uuid, after])
    return list(messages.filter(id__in=ids))


def active_tail(thread: Thread, *, head_depth: int, count: int) -> list[Message]:
    """The last `count` messages of the thread's active path, root first."""
    return list(
        _window_messages()
        .filter(thread=thread, active=True, depth__gt=head_depth - count)
        .order_by("depth")
    )


def siblings_of(thread: Thread, messages: Sequence[Message]) -> dict[str, list[tuple[str, bool]]]:
    """For each message with siblings: every (id, active) at its fork point, oldest first.

    One grouped query over the parents of the given messages (and the roots, when the window
    starts at the root).
    """
    parent_ids = {m.parent_id for m in messages if m.parent_id}
    has_root = any(m.parent_id is None for m in messages)
    if not parent_ids and not has_root:
        return {}
    where = Q(parent_id__in=parent_ids)
    if has_root:
        where |= Q(parent_id__isnull=True)
    rows = (
        Message.objects.filter(where, thread=thread)
        .values("parent_id")
        .annotate(
            n=Count("id"),
            ids=ArrayAgg("id", order_by="id"),
            actives=ArrayAgg("active", order_by="id"),
        )
        .filter(n__gt=1)
        .values_list("ids", "actives")
    )
    result: dict[str, list[tuple[str, bool]]] = {}
    for ids, actives in rows:
        group = [(ulid_of(i), bool(a)) for i, a in zip(ids, actives, strict=True)]
        for message_id, _ in group:
            result[message_id] = group
    return result


# A message of the tree map: (id as hex, parent id as hex, role, depth, active, run status).
TreeRow = tuple[str, str | None, str, int, bool, str]
# A run without messages: (run id, fork point as hex, status).
BareRun = tuple[str, str | None, str]


def tree_rows(thread: Thread) -> list[TreeRow]:
    """(id, parent id, role, depth, active, run status) of every message, in one query.

    The status of a run stopped in the browser (committed with what streamed) is "stopped".
    Ids come back as 32-digit hex (same order as the ULIDs) because turning thousands of them
    into ULID strings costs more than the query; `ulid_from_hex` converts the few shown.
    Each message's run is looked up by its key (the fenced LATERAL), whatever the planner's
    statistics: a hash join read every run of the store when they were stale (after a bulk
    load), 110 ms in the database at 2,000,000 messages.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT replace(m.id::text, '-', ''), replace(m.parent_id::text, '-', ''),
                   m.role, m.depth, m.active,
                   CASE WHEN r.metadata ? 'stopped' THEN 'stopped' ELSE r.status END
            FROM transcripts_message m
            CROSS JOIN LATERAL (
                SELECT status, metadata FROM transcripts_run WHERE id = m.run_id OFFSET 0
            ) r
            WHERE m.thread_id = %s
            """,
            [to_uuid(thread.id)],
        )
        return [(i, p, role, d, a, s) for i, p, role, d, a, s in cursor.fetchall()]


def runs_without_messages(thread: Thread) -> list[BareRun]:
    """(run id, fork point as hex, status) of the runs that are open, failed or cancelled."""
    runs = (
        Run.objects.filter(
            thread=thread,
            status__in=[RunStatus.FAILED, RunStatus.CANCELLED, *OPEN_STATUSES],
        )
        .order_by("id")
        .values_list("id", "fork_from_id", "status")
    )
    return [(i, to_uuid(f).hex if f else None, s) for i, f, s in runs]
