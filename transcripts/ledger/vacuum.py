"""After a redaction, VACUUM and ANALYZE the tables it rewrote, so that the old content leaves
the dead row versions and the planner's statistics; after a large import, ANALYZE the tables it
filled, so that the next reads are planned for the store as it now is (`analyze_after_import`).

An UPDATE leaves the row version it replaces in the table (and its TOAST table and indexes)
until a VACUUM; ANALYZE replaces the sampled values `pg_statistic` keeps. The worker's sweep
(`transcripts.worker.sweeps`) calls `vacuum_after_redaction` every beat: it vacuums when a
redaction was recorded since the tables' last VACUUM and they hold dead rows. No marker of its
own: the audit record of the redaction and PostgreSQL's `pg_stat_user_tables` say it all.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import connection

from transcripts.models import AuditRecord, Event, Message, Run, Thread

logger = logging.getLogger(__name__)

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


# autovacuum's own rule for when a table's statistics are stale: more rows changed since its
# last ANALYZE than autovacuum_analyze_threshold + autovacuum_analyze_scale_factor * its rows
# (pg_class.reltuples, -1 when never counted). The server's settings, not a copy of them.
_ANALYZE_THRESHOLDS = """
    SELECT c.relname,
           current_setting('autovacuum_analyze_threshold')::float8
           + current_setting('autovacuum_analyze_scale_factor')::float8
             * greatest(c.reltuples, 0)
    FROM pg_class c
    WHERE c.oid = ANY(%s::regclass[])
"""


def analyze_after_import(
    *, threads: int, messages: int, runs: int | None = None, events: int | None = None
) -> list[str]:
    """ANALYZE the tables an import just wrote when it wrote enough of them to make autovacuum
    analyze them (see _ANALYZE_THRESHOLDS): now, not when autovacuum gets round to it, so that
    the reads that follow an import (a search, a conversation) are planned with statistics of
    the store as it is. Returns the tables analyzed.

    The import's own counts decide, not `pg_stat_user_tables.n_mod_since_analyze`: a backend
    reports its changes to the statistics system only some time after its commit. An imported
    thread has at least one run and an imported message at least one event, so runs and events
    not counted are the threads' and the messages' counts (a lower bound: a table this
    undercounts is left to autovacuum, as before). A small import into a large store analyzes
    nothing.

    Outside any transaction only (call it after the import's commit; inside one, nothing is
    done: the statistics would be of rows nobody else sees yet). An ANALYZE that fails (a
    lock, a cancel) is logged and never fails the import: autovacuum analyzes later.
    SKIP_LOCKED leaves a table another ANALYZE (autovacuum's, another import's) holds.
    """
    if connection.in_atomic_block:
        return []
    written = {
        Thread._meta.db_table: threads,
        Run._meta.db_table: threads if runs is None else runs,
        Message._meta.db_table: messages,
        Event._meta.db_table: messages if events is None else events,
    }
    if not any(written.values()):
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute(_ANALYZE_THRESHOLDS, [list(written)])
            due = [table for table, threshold in cursor.fetchall() if written[table] > threshold]
            if due:
                tables = ", ".join(connection.ops.quote_name(table) for table in due)
                cursor.execute(f"ANALYZE (SKIP_LOCKED) {tables}")
    except Exception:
        logger.exception("ANALYZE after an import failed; autovacuum will analyze later")
        return []
    return sorted(due)
