"""Deleting whole threads: everything in them goes, the audit log stays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from transcripts.ids import to_uuid


@dataclass(frozen=True)
class Deleted:
    """How many rows a deletion removed, by kind."""

    threads: int = 0
    runs: int = 0
    events: int = 0
    messages: int = 0
    reports: int = 0
    ratings: int = 0

    def __add__(self, other: Deleted) -> Deleted:
        return Deleted(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, int, int, int, int, int]:
        return (self.threads, self.runs, self.events, self.messages, self.reports, self.ratings)

    def as_dict(self) -> dict[str, int]:
        """The counts by name, as the audit log and the command print them."""
        names = ("threads", "runs", "events", "messages", "reports", "ratings")
        return dict(zip(names, self.as_tuple(), strict=True))


# Children first; the foreign keys inside a thread (parents, heads, fork points, superseding
# runs) are deferred to commit, by which time every row they point at is gone too. A thread
# forked off a deleted one keeps living without its parent. The event log has no foreign keys
# (Event): its rows go here, found by run through its key, (run_id, seq, thread_id).
_DELETE = (
    (
        "events",
        "DELETE FROM transcripts_event WHERE thread_id = ANY(%(ids)s) AND run_id IN"
        " (SELECT id FROM transcripts_run WHERE thread_id = ANY(%(ids)s))",
    ),
    ("ratings", "DELETE FROM transcripts_runrating WHERE thread_id = ANY(%(ids)s)"),
    ("reports", "DELETE FROM transcripts_report WHERE thread_id = ANY(%(ids)s)"),
    ("messages", "DELETE FROM transcripts_message WHERE thread_id = ANY(%(ids)s)"),
    ("runs", "DELETE FROM transcripts_run WHERE thread_id = ANY(%(ids)s)"),
    ("threads", "DELETE FROM transcripts_thread WHERE id = ANY(%(ids)s)"),
)


@transaction.atomic
def delete_threads(thread_ids: Sequence[str]) -> Deleted:
    """Delete the threads and their runs, events, messages, reports, ratings, scores and
    feedback."""
    if not thread_ids:
        return Deleted()
    params = {"ids": [to_uuid(i) for i in thread_ids]}
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE transcripts_thread SET parent_thread_id = NULL"
            " WHERE parent_thread_id = ANY(%(ids)s) AND NOT id = ANY(%(ids)s)",
            params,
        )
        cursor.execute(
            "UPDATE transcripts_thread SET head_id = NULL WHERE id = ANY(%(ids)s)", params
        )
        # Share links point at the messages: they go first, and are not counted.
        cursor.execute("DELETE FROM transcripts_sharelink WHERE thread_id = ANY(%(ids)s)", params)
        cursor.execute("DELETE FROM transcripts_threadpin WHERE thread_id = ANY(%(ids)s)", params)
        # Scores and feedback (issue 28) go with their thread, uncounted like the links.
        cursor.execute("DELETE FROM transcripts_score WHERE thread_id = ANY(%(ids)s)", params)
        cursor.execute("DELETE FROM transcripts_feedback WHERE thread_id = ANY(%(ids)s)", params)
        # Their queue items (issue 28) too, with the reviews of them.
        cursor.execute(
            "DELETE FROM transcripts_queuereview WHERE item_id IN"
            " (SELECT id FROM transcripts_queueitem WHERE thread_id = ANY(%(ids)s))",
            params,
        )
        cursor.execute("DELETE FROM transcripts_queueitem WHERE thread_id = ANY(%(ids)s)", params)
        # And their experiments' items (issue 29).
        cursor.execute(
            "DELETE FROM transcripts_experimentitem WHERE thread_id = ANY(%(ids)s)", params
        )
        for name, statement in _DELETE:
            cursor.execute(statement, params)
            counts[name] = cursor.rowcount
    return Deleted(**counts)


@transaction.atomic
def delete_runs(run_ids: Sequence[str], thread_ids: Sequence[str]) -> None:
    """Delete runs no other run builds on (a discarded experiment's candidates) with their
    events, messages and the feedback on them; their scores and ratings go first (the
    caller's)."""
    params = {"runs": [to_uuid(i) for i in run_ids], "threads": [to_uuid(i) for i in thread_ids]}
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM transcripts_event WHERE thread_id = ANY(%(threads)s)"
            " AND run_id = ANY(%(runs)s)",
            params,
        )
        cursor.execute(
            "DELETE FROM transcripts_feedback WHERE thread_id = ANY(%(threads)s) AND message_id IN"
            " (SELECT id FROM transcripts_message WHERE run_id = ANY(%(runs)s))",
            params,
        )
        cursor.execute(
            "DELETE FROM transcripts_message WHERE thread_id = ANY(%(threads)s)"
            " AND run_id = ANY(%(runs)s)",
            params,
        )
        cursor.execute(
            "DELETE FROM transcripts_run WHERE thread_id = ANY(%(threads)s) AND id = ANY(%(runs)s)",
            params,
        )
