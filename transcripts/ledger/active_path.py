"""Moving a thread's active path (and reviving the runs whose branch comes back onto it)."""

from __future__ import annotations

from django.db import connection

from transcripts.ids import to_uuid
from transcripts.models import Thread

_PATH_TO = """
    WITH RECURSIVE path AS (
        SELECT id, parent_id FROM transcripts_message WHERE id = %(leaf)s
        UNION ALL
        SELECT m.id, m.parent_id FROM transcripts_message m JOIN path p ON m.id = p.parent_id
    )
"""

# A superseded run whose messages are back on the active path (its branch was continued or
# restored) is the committed run at its fork point again, and the run that replaced it there
# is superseded in turn: otherwise the active path would run through "superseded" runs.
_REVIVE = """
    WITH revived AS (
        SELECT DISTINCT r.id, r.fork_from_id FROM transcripts_run r
        JOIN transcripts_message m ON m.run_id = r.id
        WHERE m.thread_id = %(thread)s AND m.active AND r.status = 'superseded'
    ), replaced AS (
        UPDATE transcripts_run o SET status = 'superseded', superseded_by_id = v.id
        FROM revived v
        WHERE o.thread_id = %(thread)s AND o.status = 'committed'
            AND o.fork_from_id IS NOT DISTINCT FROM v.fork_from_id
    )
    UPDATE transcripts_run SET status = 'committed', superseded_by_id = NULL
    WHERE id IN (SELECT id FROM revived)
"""


def activate_path(thread: Thread, leaf_id: str | None) -> None:
    """Make the path from the root to leaf_id the thread's active path (None: no path)."""
    with connection.cursor() as cursor:
        if leaf_id is None:
            cursor.execute(
                "UPDATE transcripts_message SET active = false WHERE thread_id = %s AND active",
                [to_uuid(thread.id)],
            )
            return
        params = {"leaf": to_uuid(leaf_id), "thread": to_uuid(thread.id)}
        cursor.execute(
            _PATH_TO + "UPDATE transcripts_message SET active = false WHERE thread_id = %(thread)s"
            " AND active AND id NOT IN (SELECT id FROM path)",
            params,
        )
        cursor.execute(
            _PATH_TO + "UPDATE transcripts_message SET active = true"
            " WHERE id IN (SELECT id FROM path) AND NOT active",
            params,
        )
        cursor.execute(_REVIVE, params)
