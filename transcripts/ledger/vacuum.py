"""After a redaction, VACUUM and ANALYZE the tables it rewrote, so that the old content leaves
the dead row versions and the planner's statistics.

An UPDATE leaves the row version it replaces in the table (and its TOAST table and indexes)
until a VACUUM; ANALYZE replaces the sampled values `pg_statistic` keeps. The worker's sweep
(`transcripts.worker.sweeps`) calls `vacuum_after_redaction` every beat: it vacuums when a
redaction was recorded since the tables' last VACUUM and they hold dead rows. No marker of its
own: the audit record of the redaction and PostgreSQL's `pg_stat_user_tables` say it all.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection

from transcripts.models import AuditRecord, Event, Message, Run, Thread

# The tables a redaction rewrites: events, messages, runs (usage, error, snapshot), threads
# (a title made from the text).
REDACTED_TABLES = tuple(model._meta.db_table for model in (Event, Message, Run, Thread))
# A redaction still open when a VACUUM starts leaves rows that are dead only after it, and the
# application's clock (the audit record's time) may trail the database's (the VACUUM's): a
# redaction recorded this close before the last VACUUM asks for another, if rows are dead.
IN_FLIGHT = timedelta(seconds=60)


def _last_vacuum_and_dead_rows() -> tuple[datetime | None, int]:
    """When the redacted tables were last all vacuumed by hand (None: one never was), and how
    many dead rows they hold, as the database's statistics say."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT CASE WHEN count(last_vacuum) = count(*) THEN min(last_vacuum) END,"
            " coalesce(sum(n_dead_tup), 0)"
            " FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [list(REDACTED_TABLES)],
        )
        last_vacuum, dead = cursor.fetchone()
    return last_vacuum, int(dead)


# The redactions this process's last VACUUM came after: each asks for one VACUUM, not one a
# beat while the busy tables keep making dead rows (every append updates its run's row).
_covered: set[tuple[int, datetime]] = set()


def _redactions_due() -> set[tuple[int, datetime]] | None:
    """The redactions a VACUUM would cover now, or None when none is due: the redacted tables
    hold dead rows and a redaction not yet covered was recorded since their last VACUUM (or
    shortly before it, see IN_FLIGHT); when none is known (statistics reset, or never vacuumed
    by hand), whenever they hold dead rows. Cheap enough for every beat: the statistics first,
    then the audit records since that VACUUM only."""
    last_vacuum, dead = _last_vacuum_and_dead_rows()
    if dead == 0:
        return None
    if last_vacuum is None:
        return set()
    since = AuditRecord.objects.filter(created_at__gt=last_vacuum - IN_FLIGHT, action="redact")
    redactions = set(since.values_list("pk", "created_at"))
    return redactions if redactions - _covered else None


def vacuum_due() -> bool:
    """Whether a VACUUM of the redacted tables is due (see _redactions_due)."""
    return _redactions_due() is not None


def vacuum_after_redaction() -> list[str]:
    """VACUUM (ANALYZE) the redacted tables when one is due; the tables vacuumed.

    VACUUM cannot run inside a transaction: inside one, nothing is done. `pg_statistic` is
    vacuumed after (the database skips it with a warning unless the role may).
    """
    if connection.in_atomic_block:
        return []
    due = _redactions_due()
    if due is None:
        return []
    tables = ", ".join(connection.ops.quote_name(table) for table in REDACTED_TABLES)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {tables}")
        cursor.execute("VACUUM pg_catalog.pg_statistic")
    _covered.clear()
    _covered.update(due)
    return list(REDACTED_TABLES)
