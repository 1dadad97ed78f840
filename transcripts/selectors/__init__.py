"""Reads: querysets and lists for the API, the views and the admin. Nothing here writes.

A facade over modules with one subject each: `threads.py` (visibility, search, filters,
pages, list stats), `paths.py` (the tree and paths through it), `runs.py` (a run, its events
and projection), `trace.py` (a run's events as spans and readable segments), `compare.py`
(the branches at a fork point), `messages.py` (one-line previews), `moderation.py` (the
reports queue), `shares.py` (share links, the branch each shows), `projects.py` (a project's
members, tokens and audit log), `imports.py` (import jobs), `datasets.py` (the threads and
trees a dataset reads), `exports.py` (a streamed export's batches) and `pages.py` (keyset
pages and batch walks; cursors are `transcripts.pagination`). ULID conversions live in
`transcripts.ids`.
"""

from __future__ import annotations

from transcripts.selectors.compare import (
    UNMATERIALIZED,
    BranchContents,
    branch_contents,
    branch_runs,
    fork_depth,
    rival_run_ids,
    run_messages,
    run_projections,
    run_ratings,
    runs_at_fork_point,
)
from transcripts.selectors.imports import imported_threads, latest_jobs
from transcripts.selectors.messages import (
    ellipsize,
    first_user_previews,
    message_in,
    message_preview,
    message_previews,
)
from transcripts.selectors.moderation import (
    moderation_counts,
    queued_report,
    report_counts,
    report_page,
    report_queue,
)
from transcripts.selectors.pages import keyset_batches, keyset_page
from transcripts.selectors.paths import (
    NEXT_CHILD_SQL,
    active_path,
    active_tail,
    branch_window,
    latest_leaf_below,
    path_ids_to,
    path_page,
    path_to,
    runs_without_messages,
    siblings_of,
    tree_rows,
)
from transcripts.selectors.projects import (
    NEWEST_FIRST,
    active_user,
    audit_page,
    members_of,
    tokens_of,
)
from transcripts.selectors.runs import (
    conversation_for,
    event_dicts,
    event_page,
    get_run,
    last_choice,
    last_message_id,
    live_run_facts,
    open_run_of,
    project_run,
    projector_for,
    replay,
    retry_of,
    trace_page_runs,
)
from transcripts.selectors.shares import (
    latest_shares,
    resolve_share,
    share_by_id,
    shared_path,
    thread_shares,
)
from transcripts.selectors.snippets import HIT_START, HIT_STOP, Snippet
from transcripts.selectors.threads import (
    RECENT_FIRST,
    THREAD_SORTS,
    SearchHit,
    ThreadListFacts,
    filter_threads,
    preferred_counts,
    recent_threads,
    search_hits,
    search_threads,
    sort_position,
    thread_list_facts,
    thread_page,
    visible_threads,
    with_external_id,
)

__all__ = [
    "HIT_START",
    "HIT_STOP",
    "NEWEST_FIRST",
    "NEXT_CHILD_SQL",
    "RECENT_FIRST",
    "THREAD_SORTS",
    "UNMATERIALIZED",
    "BranchContents",
    "SearchHit",
    "Snippet",
    "ThreadListFacts",
    "active_path",
    "active_tail",
    "active_user",
    "audit_page",
    "branch_contents",
    "branch_runs",
    "branch_window",
    "conversation_for",
    "ellipsize",
    "event_dicts",
    "event_page",
    "filter_threads",
    "first_user_previews",
    "fork_depth",
    "get_run",
    "imported_threads",
    "keyset_batches",
    "keyset_page",
    "last_choice",
    "last_message_id",
    "latest_jobs",
    "latest_leaf_below",
    "latest_shares",
    "live_run_facts",
    "members_of",
    "message_in",
    "message_preview",
    "message_previews",
    "moderation_counts",
    "open_run_of",
    "path_ids_to",
    "path_page",
    "path_to",
    "preferred_counts",
    "project_run",
    "projector_for",
    "queued_report",
    "recent_threads",
    "replay",
    "report_counts",
    "report_page",
    "report_queue",
    "resolve_share",
    "retry_of",
    "rival_run_ids",
    "run_messages",
    "run_projections",
    "run_ratings",
    "runs_at_fork_point",
    "runs_without_messages",
    "search_hits",
    "search_threads",
    "share_by_id",
    "shared_path",
    "siblings_of",
    "sort_position",
    "thread_list_facts",
    "thread_page",
    "thread_shares",
    "tokens_of",
    "trace_page_runs",
    "tree_rows",
    "visible_threads",
    "with_external_id",
]
