"""Reads: querysets and lists for the API, the views and the admin. Nothing here writes.

A facade over modules with one subject each: `threads.py` (visibility, search, filters,
pages, list stats), `paths.py` (the tree and paths through it), `runs.py` (a run, its events
and projection), `trace.py` (a run's events as spans and readable segments), `compare.py`
(the branches at a fork point), `messages.py` (one-line previews), `moderation.py` (the
reports queue) and `shares.py` (share links, the branch each shows). ULID conversions live
in `transcripts.ids`.
"""

from __future__ import annotations

from transcripts.selectors.compare import (
    UNMATERIALIZED,
    branch_runs,
    rival_run_ids,
    run_messages,
    run_projections,
    run_ratings,
    runs_at_fork_point,
)
from transcripts.selectors.messages import (
    ellipsize,
    first_user_previews,
    message_preview,
    message_previews,
)
from transcripts.selectors.moderation import moderation_counts, report_counts, report_queue
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
from transcripts.selectors.runs import (
    conversation_for,
    event_dicts,
    get_run,
    last_choice,
    project_run,
    projector_for,
    replay,
)
from transcripts.selectors.shares import resolve_share, share_by_id, shared_path, thread_shares
from transcripts.selectors.threads import (
    HIT_START,
    HIT_STOP,
    SearchHit,
    ThreadStats,
    filter_threads,
    preferred_counts,
    search_hits,
    search_threads,
    thread_page,
    thread_stats,
    visible_threads,
)

__all__ = [
    "HIT_START",
    "HIT_STOP",
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
    "first_user_previews",
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
    "resolve_share",
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
    "thread_page",
    "thread_shares",
    "thread_stats",
    "tree_rows",
    "visible_threads",
]
