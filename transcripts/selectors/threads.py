"""Reads of threads: who sees which, search, filters, pages, and what the thread list shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from django.contrib.postgres.search import SearchHeadline, SearchQuery
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from transcripts.models import OPEN_STATUSES, Message, Run, RunRating, RunStatus, Thread
from transcripts.selectors.ulids import ulid_of


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
    # Titles match the words as typed: a phrase's quotes are search syntax, not title text.
    title = " ".join(query.replace('"', " ").split())
    if not title:
        return threads.filter(Exists(hits))
    return threads.filter(Exists(hits) | Q(title__icontains=title))


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
        ulid_of(row["thread_id"]): (row["n"], row["n"] - row["parents"])
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
        models.setdefault(ulid_of(thread_id), []).append(model)
    return {
        t: ThreadStats(
            messages=counts.get(t, (0, 0))[0],
            branches=counts.get(t, (0, 0))[1],
            models=tuple(models.get(t, ())),
        )
        for t in thread_ids
    }


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
    return {ulid_of(thread_id): n for thread_id, n in rows}


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
    return {ulid_of(t): SearchHit(ulid_of(m), s or "") for t, m, s in rows}
