"""Reads: querysets and lists for the API, the views and the admin. Nothing here writes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.contrib.postgres.aggregates import ArrayAgg
from django.contrib.postgres.search import SearchHeadline, SearchQuery
from django.db import connection
from django.db.models import Case, Count, Exists, OuterRef, Q, QuerySet, When
from django.db.models.expressions import RawSQL
from ulid import ULID

from transcripts.fields import to_uuid
from transcripts.models import (
    OPEN_STATUSES,
    Event,
    Message,
    Report,
    ReportStatus,
    Run,
    RunRating,
    RunStatus,
    Thread,
)
from transcripts.projector import Projection, Projector
from transcripts.selectors.paths import (
    NEXT_CHILD_SQL,
    active_path,
    latest_leaf_below,
    path_ids_to,
    path_to,
)
from transcripts.selectors.runs import (
    conversation_for,
    event_dicts,
    get_run,
    last_choice,
    project_run,
    projector_for,
    replay,
)


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


def thread_page(
    threads: QuerySet[Thread], *, after: tuple[datetime, str] | None, limit: int
) -> list[Thread]:
    """Up to limit threads, most recently updated first, after the (updatedAt, id) cursor."""
    ordered = threads.order_by("-updated_at", "-id")
    if after is not None:
        updated_at, thread_id = after
        ordered = ordered.filter(
            Q(updated_at__lt=updated_at) | Q(updated_at=updated_at, id__lt=thread_id)
        )
    return list(ordered[:limit])


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


# --- browsing UI ---------------------------------------------------------------------------


def _ulid(value: Any) -> str:
    return str(ULID.from_uuid(value)) if isinstance(value, uuid.UUID) else str(value)


def _window_messages() -> QuerySet[Message]:
    """Messages with just the run columns the conversation view shows."""
    return Message.objects.select_related("run").only(
        *(f.name for f in Message._meta.concrete_fields if f.name != "search"),
        "run__id",
        "run__status",
        "run__model",
        "run__generator",
    )


# Ancestors of the anchor (up to `before`) and its most recent descendants (up to `after`),
# following the rule of ledger.latest_leaf_below: committed children first, then the newest.
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
        group = [(_ulid(i), bool(a)) for i, a in zip(ids, actives, strict=True)]
        for message_id, _ in group:
            result[message_id] = group
    return result


@dataclass(frozen=True)
class ThreadStats:
    """Counts shown in the thread list."""

    messages: int = 0
    branches: int = 0
    models: tuple[str, ...] = ()


def thread_stats(thread_ids: Sequence[str]) -> dict[str, ThreadStats]:
    """Message count, branch count (leaves of the tree) and models used, per thread.

    Every message but the leaves is somebody's parent, so leaves = messages - distinct parents.
    """
    if not thread_ids:
        return {}
    counts = {
        _ulid(row["thread_id"]): (row["n"], row["n"] - row["parents"])
        for row in Message.objects.filter(thread_id__in=thread_ids)
        .values("thread_id")
        .annotate(n=Count("id"), parents=Count("parent_id", distinct=True))
    }
    models: dict[str, list[str]] = {}
    runs = (
        Run.objects.filter(thread_id__in=thread_ids)
        .exclude(model="")
        .values_list("thread_id", "model")
        .distinct()
        .order_by("thread_id", "model")
    )
    for thread_id, model in runs:
        models.setdefault(_ulid(thread_id), []).append(model)
    return {
        t: ThreadStats(
            messages=counts.get(t, (0, 0))[0],
            branches=counts.get(t, (0, 0))[1],
            models=tuple(models.get(t, ())),
        )
        for t in thread_ids
    }


def filter_threads(
    threads: QuerySet[Thread],
    *,
    status: str = "",
    has_branches: bool = False,
    has_failed_runs: bool = False,
    flagged: bool = False,
    since: date | None = None,
    until: date | None = None,
    agent_or_model: str = "",
) -> QuerySet[Thread]:
    """Threads narrowed by the thread list's filters (every one optional)."""
    if status == "live":
        threads = threads.filter(
            Exists(Run.objects.filter(thread_id=OuterRef("pk"), status__in=OPEN_STATUSES))
        )
    elif status == "locked":
        threads = threads.filter(locked=True)
    elif status == "hidden":
        threads = threads.filter(hidden=True)
    elif status == "visible":
        threads = threads.filter(hidden=False)
    if has_branches:
        # The active path runs from a root to a leaf, so any inactive message is a branch.
        threads = threads.filter(
            Exists(Message.objects.filter(thread_id=OuterRef("pk"), active=False))
        )
    if has_failed_runs:
        threads = threads.filter(
            Exists(Run.objects.filter(thread_id=OuterRef("pk"), status=RunStatus.FAILED))
        )
    if flagged:
        # Flagged by a moderator, or marked flagged by the source (as the conversation shows).
        is_flagged = (
            Q(flagged_at__isnull=False)
            | Q(metadata__flagged=True)
            | (
                Q(metadata__has_key="flagged")
                & ~Q(metadata__flagged__in=[False, 0, ""])
                & ~Q(metadata__flagged=None)
            )
        )
        threads = threads.filter(
            Exists(Message.objects.filter(is_flagged, thread_id=OuterRef("pk")))
        )
    if since is not None:
        threads = threads.filter(updated_at__date__gte=since)
    if until is not None:
        threads = threads.filter(updated_at__date__lte=until)
    needle = agent_or_model.strip()
    if needle:
        runs = Run.objects.filter(thread_id=OuterRef("pk"), model__icontains=needle)
        agents = Message.objects.filter(
            Q(metadata__agentId__icontains=needle) | Q(metadata__model__icontains=needle),
            thread_id=OuterRef("pk"),
        )
        threads = threads.filter(Exists(runs) | Exists(agents) | Q(agents__icontains=needle))
    return threads


@dataclass(frozen=True)
class SearchHit:
    """The most recent message of a thread that matches a search, with a marked snippet."""

    message_id: str
    snippet: str


# ts_headline marks hits with control characters; the view escapes the text, then marks them.
HIT_START, HIT_STOP = "\x02", "\x03"


def search_hits(thread_ids: Sequence[str], query: str) -> dict[str, SearchHit]:
    """For each thread, its newest message matching query (any branch) and a snippet."""
    query = query.strip()
    if not query or not thread_ids:
        return {}
    search = SearchQuery(query, config="simple", search_type="websearch")
    text = RawSQL(
        "array_to_string(ARRAY(SELECT jsonb_array_elements_text("
        "jsonb_path_query_array(transcripts_message.parts, '$[*].text'))), ' ')",
        [],
    )
    rows = (
        Message.objects.filter(thread_id__in=thread_ids, search=search)
        .order_by("thread_id", "-id")
        .distinct("thread_id")
        .annotate(
            snippet=SearchHeadline(
                text,
                search,
                config="simple",
                start_sel=HIT_START,
                stop_sel=HIT_STOP,
                max_words=24,
                min_words=8,
            )
        )
        .values_list("thread_id", "id", "snippet")
    )
    return {_ulid(t): SearchHit(_ulid(m), s or "") for t, m, s in rows}


def tree_rows(thread: Thread) -> list[tuple[str, str | None, str, int, bool, str]]:
    """(id, parent id, role, depth, active, run status) of every message, in one query.

    Ids come back as 32-digit hex (same order as the ULIDs) because turning thousands of them
    into ULID strings costs more than the query; `ulid_from_hex` converts the few shown.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT replace(m.id::text, '-', ''), replace(m.parent_id::text, '-', ''),
                   m.role, m.depth, m.active, r.status
            FROM transcripts_message m JOIN transcripts_run r ON r.id = m.run_id
            WHERE m.thread_id = %s
            """,
            [to_uuid(thread.id)],
        )
        return [(i, p, role, d, a, s) for i, p, role, d, a, s in cursor.fetchall()]


def ulid_from_hex(value: str) -> str:
    """The ULID string of a 32-digit hex id (as tree_rows returns them)."""
    return str(ULID.from_hex(value))


def runs_without_messages(thread: Thread) -> list[tuple[str, str | None, str]]:
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


# A message in one line: its text (every text part), else what it calls or holds (tool names,
# part types). Computed in SQL so that lists never load the parts themselves.
_PREVIEW_SQL = """
    left(coalesce(
        nullif(btrim(array_to_string(ARRAY(SELECT jsonb_array_elements_text(
            jsonb_path_query_array(transcripts_message.parts, '$[*] ? (@.type == "text").text')
        )), ' ')), ''),
        nullif(array_to_string(ARRAY(SELECT coalesce(p->>'toolName', p->>'type')
            FROM jsonb_array_elements(CASE jsonb_typeof(transcripts_message.parts)
                WHEN 'array' THEN transcripts_message.parts ELSE '[]'::jsonb END) p), ', '), ''),
        ''), %s)
"""


def message_preview(length: int) -> RawSQL:
    """An expression for Message querysets: the preview, one character longer than length
    when there is more (finish it with `ellipsize`)."""
    return RawSQL(_PREVIEW_SQL, [length + 1])


def ellipsize(text: str, length: int) -> str:
    """text cut to length characters, with an ellipsis when it was longer."""
    text = " ".join(text.split())
    return text if len(text) <= length else text[:length].rstrip() + "\N{HORIZONTAL ELLIPSIS}"


def message_previews(message_ids: Sequence[str], length: int = 90) -> dict[str, str]:
    """The one-line preview of each message (see message_preview), in one query."""
    rows = (
        Message.objects.filter(pk__in=message_ids)
        .annotate(preview=message_preview(length))
        .values_list("id", "preview")
    )
    return {i: ellipsize(s or "", length) for i, s in rows}


def run_output_series(run: Run, buckets: int = 48) -> list[tuple[float, int]]:
    """Characters of text and reasoning streamed per time bucket: (seconds, chars) pairs."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH ev AS (
                SELECT at, coalesce(length(data->>'delta'), 0)
                         + coalesce(length(data->>'text'), 0) AS chars
                FROM transcripts_event
                WHERE run_id = %(run)s AND kind IN ('text-delta', 'reasoning')
            ), bounds AS (
                SELECT min(at) AS lo, greatest(extract(epoch FROM max(at) - min(at)), 0.001) AS span
                FROM transcripts_event WHERE run_id = %(run)s
            )
            SELECT least(floor(extract(epoch FROM ev.at - b.lo) / b.span * %(n)s), %(n)s - 1)
                       AS bucket,
                   max(b.span) AS span, sum(ev.chars) AS chars
            FROM ev CROSS JOIN bounds b
            GROUP BY 1 ORDER BY 1
            """,
            {"run": to_uuid(run.id), "n": buckets},
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    span = float(rows[0][1])
    by_bucket = {int(b): int(c) for b, _, c in rows}
    return [((i + 1) * span / buckets, by_bucket.get(i, 0)) for i in range(buckets)]


# --- compare, ratings, moderation queue ----------------------------------------------------

# Runs whose messages exist only as events: their branch is a projection, not rows.
UNMATERIALIZED = (RunStatus.FAILED, RunStatus.CANCELLED, *OPEN_STATUSES)


def branch_runs(thread: Thread, fork_point: Message | None) -> list[Run]:
    """Every run with a branch just below fork_point (None: the roots), in one query.

    That is each run that made a child of fork_point (a run may also hold the messages above
    it), and each run forked from it that never materialized (failed, cancelled, still open).
    The runs come without their snapshot, which can be as large as the run, and with
    `on_active_path`: whether their branch is the thread's active one.
    """
    children = Message.objects.filter(run_id=OuterRef("pk"))
    if fork_point is None:
        children = children.filter(parent__isnull=True)
        forked = Q(fork_from__isnull=True)
    else:
        children = children.filter(parent_id=fork_point.id)
        forked = Q(fork_from_id=fork_point.id)
    return list(
        Run.objects.filter(thread=thread)
        .filter(Exists(children) | (forked & Q(status__in=UNMATERIALIZED)))
        .annotate(on_active_path=Exists(children.filter(active=True)))
        .defer("snapshot")
    )


def run_messages(run_ids: Sequence[str], *, below_depth: int = -1) -> dict[str, list[Message]]:
    """The materialized messages of each run deeper than below_depth, in order (one query)."""
    result: dict[str, list[Message]] = {run_id: [] for run_id in run_ids}
    if not run_ids:
        return result
    messages = Message.objects.filter(run_id__in=run_ids, depth__gt=below_depth).order_by(
        "run_id", "position"
    )
    for message in messages:
        result[message.run_id].append(message)
    return result


def run_projections(runs: Sequence[Run]) -> dict[str, Projection]:
    """What each run's events amount to, from one query over all their events.

    Projecting from seq 1 gives what projecting from a snapshot gives (the projector's
    contract), so the snapshots, possibly large, are not loaded.
    """
    projectors = {run.id: Projector(run_id=run.id, parent_id=run.fork_from_id) for run in runs}
    if not projectors:
        return {}
    rows = (
        Event.objects.filter(run_id__in=list(projectors))
        .order_by("run_id", "seq")
        .values_list("run_id", "seq", "kind", "data", "at")
    )
    for run_id, seq, kind, data, at in rows.iterator(chunk_size=2000):
        projectors[_ulid(run_id)].apply({"seq": seq, "kind": kind, "data": data, "at": at})
    return {run_id: projector.result() for run_id, projector in projectors.items()}


def run_ratings(run_ids: Sequence[str]) -> dict[str, list[RunRating]]:
    """Every rating of the given runs with its user, oldest first (one query)."""
    result: dict[str, list[RunRating]] = {run_id: [] for run_id in run_ids}
    ratings = (
        RunRating.objects.filter(run_id__in=run_ids)
        .select_related("user")
        .order_by("created_at", "id")
    )
    for rating in ratings:
        result[rating.run_id].append(rating)
    return result


def rival_run_ids(run: Run) -> list[str]:
    """Runs with another branch at any fork point where run has one: its rivals."""
    # A run of several messages (a prompt and its answer) has a branch below its own fork
    # point and below each of its messages but the last.
    points = {p for p in run.messages.values_list("parent_id", flat=True) if p is not None}
    if run.fork_from_id is not None:
        points.add(run.fork_from_id)
    children, forked = Q(parent_id__in=points), Q(fork_from_id__in=points)
    if run.fork_from_id is None:  # a run that starts a new root competes with the other roots
        children |= Q(parent__isnull=True)
        forked |= Q(fork_from__isnull=True)
    branch_makers = Message.objects.filter(children, thread_id=run.thread_id).values("run_id")
    rivals = Run.objects.filter(
        Q(pk__in=branch_makers) | (forked & Q(status__in=UNMATERIALIZED)),
        thread_id=run.thread_id,
    ).exclude(pk=run.pk)
    return list(rivals.values_list("id", flat=True))


def preferred_counts(thread_ids: Sequence[str]) -> dict[str, int]:
    """How many preferred marks the runs of each thread carry (one grouped query)."""
    if not thread_ids:
        return {}
    rows = (
        RunRating.objects.filter(thread_id__in=thread_ids, preferred=True)
        .values("thread_id")
        .annotate(n=Count("id"))
        .values_list("thread_id", "n")
    )
    return {_ulid(thread_id): n for thread_id, n in rows}


def report_queue(status: str = "") -> QuerySet[Report]:
    """Reports for the moderation queue, open ones first, newest first; status narrows."""
    reports = Report.objects.select_related("message", "thread", "reporter", "resolved_by")
    if status:
        reports = reports.filter(status=status)
    is_open = Case(When(status=ReportStatus.OPEN, then=0), default=1)
    return reports.order_by(is_open, "-created_at", "-id")


def report_counts() -> dict[str, int]:
    """Number of reports per status (one grouped query)."""
    rows = Report.objects.order_by().values("status").annotate(n=Count("id"))
    counts = {status: 0 for status in ReportStatus.values}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


def moderation_counts() -> dict[str, int]:
    """What waits for moderators: open reports, flagged messages and hidden threads."""
    return {
        "open_reports": Report.objects.filter(status=ReportStatus.OPEN).count(),
        "flagged_messages": Message.objects.filter(flagged_at__isnull=False).count(),
        "hidden_threads": Thread.objects.filter(hidden=True).count(),
    }


__all__ = [
    "NEXT_CHILD_SQL",
    "UNMATERIALIZED",
    "SearchHit",
    "ThreadStats",
    "active_path",
    "active_tail",
    "branch_runs",
    "branch_window",
    "conversation_for",
    "ellipsize",
    "event_dicts",
    "filter_threads",
    "get_run",
    "last_choice",
    "latest_leaf_below",
    "message_preview",
    "message_previews",
    "moderation_counts",
    "path_ids_to",
    "path_page",
    "path_to",
    "preferred_counts",
    "project_run",
    "projector_for",
    "replay",
    "report_counts",
    "report_queue",
    "rival_run_ids",
    "run_messages",
    "run_output_series",
    "run_projections",
    "run_ratings",
    "runs_at_fork_point",
    "runs_without_messages",
    "search_hits",
    "search_threads",
    "siblings_of",
    "thread_page",
    "thread_stats",
    "tree_rows",
    "ulid_from_hex",
    "visible_threads",
]
