"""Reads of threads: who sees which, search, filters, pages, and what the thread list shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.postgres.search import SearchQuery
from django.db import connections
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Upper

from transcripts.ids import to_uuid, ulid_of
from transcripts.models import Message, Run, RunRating, Thread, folded
from transcripts.pagination import Keyset, Position, decode_position, integer, moment, text, ulid
from transcripts.selectors.messages import first_user_previews
from transcripts.selectors.pages import keyset_page
from transcripts.selectors.search_text import query_text
from transcripts.selectors.snippets import (
    HEADLINE_OPTIONS,
    SOURCE_CHARS,
    Snippet,
    plain_snippets,
)

# The API's thread list: most recently updated first.
RECENT_FIRST = Keyset("updated_at", desc=True)

# The thread list's sorts, by name: a column of the thread row, each with an index (project,
# column, id) (models.THREAD_SORT_KEYS; the counters are kept by the ledger). The first name
# of a pair puts the largest or latest first, the second the other way.
SORT_PAIRS = {
    "updated_at": ("recent", "oldest"),
    "created_at": ("newest", "created_asc"),
    "message_count": ("messages", "messages_asc"),
    "branch_count": ("branches", "branches_asc"),
    "total_tokens": ("tokens", "tokens_asc"),
    "cost_micros": ("cost", "cost_asc"),
    "last_run_duration_ms": ("duration", "duration_asc"),
}
THREAD_SORTS: dict[str, Keyset] = {
    **{desc: Keyset(column, desc=True) for column, (desc, _) in SORT_PAIRS.items()},
    **{asc: Keyset(column) for column, (_, asc) in SORT_PAIRS.items()},
    "title": Keyset("title"),
}
_TIMES = ("updated_at", "created_at")


def sort_position(cursor: str, keyset: Keyset) -> Position | None:
    """The (sort value, thread id) a "load more" cursor of this sort continues after, or None
    when the cursor is not one of this sort's."""
    value = moment if keyset.key in _TIMES else text if keyset.key == "title" else integer
    return decode_position(cursor, value, ulid)


def visible_threads(*, include_hidden: bool = False) -> QuerySet[Thread]:
    """Threads a reader may see: hidden ones only for staff."""
    threads = Thread.objects.all()
    return threads if include_hidden else threads.filter(hidden=False)


def with_external_id(threads: QuerySet[Thread], external_id: str | None) -> QuerySet[Thread]:
    """threads narrowed to the one with external_id (an OTel conversation or trace id, a
    chat id); all of them when external_id is None."""
    return threads if external_id is None else threads.filter(external_id=external_id)


class AnyLanguageQuery(SearchQuery):
    """A search query in websearch syntax in any language (selectors.search_text): the
    database's transcripts_search_query of the query written as the search vector reads text
    (migration 0025). A constant, so the planner sees the words' statistics."""

    def __init__(self, query: str) -> None:
        super().__init__(query_text(query))
        self.function = "transcripts_search_query"


def with_titles(threads: QuerySet[Thread]) -> QuerySet[Thread]:
    """threads with folded_title: the title in upper case without accents (the expression of
    the trigram index thread_title_folded_trgm_idx)."""
    return threads.alias(folded_title=Upper(folded("title")))


def title_contains(title: str) -> Q:
    """The threads whose title contains title, any case, accents ignored (on with_titles; a
    title of under three letters reads the whole trigram index)."""
    return Q(folded_title__contains=Upper(folded(Value(title))))


def search_threads(threads: QuerySet[Thread], query: str) -> QuerySet[Thread]:
    """Threads whose title or any message on any branch matches query (full-text, any
    language, accents ignored when the query has none: selectors.search_text)."""
    query = query.strip()
    if not query:
        return threads
    hits = Message.objects.filter(search=AnyLanguageQuery(query))
    # Titles match the words as typed: a phrase's quotes are search syntax, not title text.
    title = " ".join(query.replace('"', " ").split())
    if not title:
        return threads.filter(Exists(hits.filter(thread_id=OuterRef("pk"))))
    titled = with_titles(Thread.objects.all()).filter(title_contains(title))
    few = few_ids(hits.values_list("thread_id").union(titled.values_list("id"), all=True))
    if few is not None:
        return threads.filter(pk__in=few)
    # Common words: the planner's choice, as before (a check per thread for the commonest; a
    # hash of the hits when its statistics say they are fewer, as phrases' often are).
    return with_titles(threads).filter(
        Exists(hits.filter(thread_id=OuterRef("pk"))) | title_contains(title)
    )


def thread_page(threads: QuerySet[Thread], *, after: Position | None, limit: int) -> list[Thread]:
    """Up to limit threads, most recently updated first, after the (updatedAt, id) cursor."""
    return keyset_page(threads, RECENT_FIRST, after=after, limit=limit)


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
    archived: bool | None = None,
    tag: str = "",
) -> QuerySet[Thread]:
    """Threads narrowed by the thread list's filters (every one optional; archived None: both
    archived and not, tag: those carrying it)."""
    if archived is not None:
        threads = threads.filter(archived=archived)
    if tag:
        # metadata.tags @> '["tag"]': the GIN index thread_tags_idx (migration 0016).
        threads = threads.filter(metadata__tags__contains=[tag])
    if status == "live":
        threads = threads.filter(open_run_count__gt=0)
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
    # The ledger's counters on the thread row (ledger/counters.py) say these at no cost.
    if has_failed_runs:
        threads = threads.filter(failed_run_count__gt=0)
    if flagged:
        # Flagged by a moderator, or marked flagged by the source (as the conversation shows).
        threads = threads.filter(flagged_count__gt=0)
    if since is not None:
        threads = threads.filter(updated_at__date__gte=since)
    if until is not None:
        threads = threads.filter(updated_at__date__lte=until)
    needle = agent_or_model.strip()
    if needle:
        threads = threads.filter(_agent_or_model(needle))
    return threads


# A filter reads its matches from the indexes (trigram and full-text, migration 0013) when
# at most this many rows match: the list is then those threads, found at once. More matches
# are common enough that walking the list in order, checking each thread, fills a page soon.
FEW_MATCHES = 500


def few_ids(matches: QuerySet[Any]) -> set[Any] | None:
    """The thread ids of matches if there are at most FEW_MATCHES rows (reading at most one
    more), else None. Given as values, the planner knows how few they are."""
    rows = list(matches[: FEW_MATCHES + 1])
    return {thread_id for (thread_id,) in rows} if len(rows) <= FEW_MATCHES else None


# How many of the newest runs the agent-or-model filter reads before it asks the indexes. A
# trigram index answers with a bitmap of every match, built whole before the first row: cheap
# for a rare name, but for a common one (a model most runs use) a bitmap of most of the table,
# and the planner's estimate of which it is goes stale after a large import. So more than
# FEW_MATCHES matches among the newest runs (read by primary key: at most this many rows, about
# 1 ms, whatever the statistics say) skip the index and walk the list.
NEWEST_RUNS = 5_000


def matches_among_newest(matches: QuerySet[Any], newest: int, upto: int) -> int:
    """How many of the newest rows of matches' table (by primary key) pass matches' filter,
    counted up to upto: a read of at most newest rows by the primary key's index, which no
    statistics change. matches filters its own table only (no joins)."""
    query = matches.query
    compiler = query.get_compiler(using=matches.db)
    where, params = compiler.compile(query.where)
    quote = compiler.connection.ops.quote_name
    table = quote(matches.model._meta.db_table)
    key = quote(matches.model._meta.pk.column)
    # The newest rows keep the table's name, so the filter's qualified columns read them; their
    # LIMIT keeps the filter outside (PostgreSQL does not pull a limited subquery up).
    sql = (
        f"SELECT count(*) FROM (SELECT 1 FROM (SELECT * FROM {table} ORDER BY {key} DESC"
        f" LIMIT %s) {table} WHERE {where or 'true'} LIMIT %s) AS newest"
    )
    with compiler.connection.cursor() as cursor:
        cursor.execute(sql, [newest, *params, upto])
        (count,) = cursor.fetchone()
    return int(count)


class EachRow(Exists):
    """EXISTS checked for each thread the list walks: OFFSET 0 keeps PostgreSQL from reading
    every match into a hash first, which costs the whole store when matches are common."""

    template = "EXISTS(%(subquery)s OFFSET 0)"


def _agent_or_model(needle: str) -> Q | Exists:
    """Threads with a run of a model, or a message or thread naming an agent or model,
    containing needle (any case)."""
    runs = Run.objects.filter(model__icontains=needle)
    messages = Message.objects.filter(
        Q(metadata__agentId__icontains=needle) | Q(metadata__model__icontains=needle)
    )
    agents = Thread.objects.filter(agents__icontains=needle)
    if matches_among_newest(runs, NEWEST_RUNS, FEW_MATCHES + 1) <= FEW_MATCHES:
        few = few_ids(
            runs.values_list("thread_id").union(
                messages.values_list("thread_id"), agents.values_list("id"), all=True
            )
        )
        if few is not None:
            return Q(pk__in=few)
    return (
        EachRow(runs.filter(thread_id=OuterRef("pk")))
        | EachRow(messages.filter(thread_id=OuterRef("pk")))
        | Q(agents__icontains=needle)
    )


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
    snippet: Snippet


# A message's text: its parts' texts joined.
_MESSAGE_TEXT = (
    "array_to_string(ARRAY(SELECT jsonb_array_elements_text("
    "jsonb_path_query_array(transcripts_message.parts, '$[*].text'))), ' ')"
)


# Each listed thread's newest message matching the query: its messages read by the thread's
# index and checked one by one (fenced by OFFSET 0, so no plan asks the full-text index). That
# index answers with every match of the store before a row is filtered by thread, and the
# planner, which takes a phrase for rare, chose it: a phrase with 4,039 hits in 2,000,000
# messages read all 4,039 for a page of 25 threads.
_NEWEST_HITS = f"""
SELECT k.thread_id, transcripts_message.id, left({_MESSAGE_TEXT}, %s),
    ts_headline('transcripts_search', {_MESSAGE_TEXT}, transcripts_search_query(%s), %s)
FROM unnest(%s::uuid[]) WITH ORDINALITY AS k (thread_id, n)
CROSS JOIN LATERAL (
    SELECT each.id, each.parts FROM (
        SELECT id, parts, search FROM transcripts_message WHERE thread_id = k.thread_id OFFSET 0
    ) AS each
    WHERE each.search @@ transcripts_search_query(%s)
    ORDER BY each.id DESC LIMIT 1
) AS transcripts_message
ORDER BY k.n
"""


def search_hits(thread_ids: Sequence[str], query: str) -> dict[str, SearchHit]:
    """For each thread, its newest message matching query (any branch) and a plain-text
    snippet with the hits marked (see selectors.snippets): a read of the listed threads'
    messages, whatever the store holds besides."""
    query = query.strip()
    if not query or not thread_ids:
        return {}
    words = query_text(query)
    using = Message.objects.all().db  # the replica when the request may read from it
    with connections[using].cursor() as cursor:
        cursor.execute(
            _NEWEST_HITS,
            [SOURCE_CHARS, words, HEADLINE_OPTIONS, [to_uuid(t) for t in thread_ids], words],
        )
        rows = cursor.fetchall()
    sources, raw = [r[2] or "" for r in rows], [r[3] or "" for r in rows]
    snippets = plain_snippets(sources, raw, query, using=using)
    return {
        ulid_of(t): SearchHit(ulid_of(m), snippet)
        for (t, m, _, _), snippet in zip(rows, snippets, strict=True)
    }


def recent_threads(readable: QuerySet[Thread], limit: int) -> list[Thread]:
    """The limit most recently active of readable (id, title and updated_at only)."""
    latest = readable.order_by("-updated_at", "-id").only("id", "title", "updated_at")
    return list(latest[:limit])


@dataclass(frozen=True)
class ThreadListFacts:
    """What the thread list shows of a page of threads besides the threads and their counters:
    each one's search hit, preferred marks and first user message (keyed by thread id)."""

    hits: dict[str, SearchHit]
    preferred: dict[str, int]
    previews: dict[str, str]


def thread_list_facts(ids: Sequence[str], query: str, preview_chars: int) -> ThreadListFacts:
    """The thread list's facts of these threads (a constant number of queries)."""
    return ThreadListFacts(
        hits=search_hits(ids, query),
        preferred=preferred_counts(ids),
        previews=first_user_previews(ids, preview_chars),
    )
