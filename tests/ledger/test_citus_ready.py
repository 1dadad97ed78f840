"""Citus-ready keys: thread_id is in every key of the thread-scoped tables, and they still hold.

`create_distributed_table(t, 'thread_id')` (threads: 'id') accepts a table only when every
primary key, unique key and foreign key between distributed tables holds the distribution
column; these tests read pg_catalog for that, then prove the composite foreign keys refuse
rows that point into another thread and that deleting a thread takes its rows with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connection, models, transaction

from tests.factories import ask, conversation, last_message, make_run, make_thread, say
from transcripts.ids import to_uuid
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.ratings import rate_run
from transcripts.ledger.reports import report_message
from transcripts.models import Event, Message, Report, Run, RunRating, ShareLink, Thread

# Each thread-scoped table and its distribution column.
DISTRIBUTION = {
    "transcripts_thread": "id",
    "transcripts_run": "thread_id",
    "transcripts_event": "thread_id",
    "transcripts_message": "thread_id",
    "transcripts_report": "thread_id",
    "transcripts_runrating": "thread_id",
    "transcripts_sharelink": "thread_id",
}

# The one unique key without the distribution column, and why it may stay: an OpenTelemetry
# conversation id is unique per project, across threads. On Citus it moves to a lookup table
# distributed by project (docs/scaling.md, "The write path"); on one PostgreSQL it is what it is.
KNOWN_EXCEPTIONS = {"thread_external_id_per_project"}

KEYS = """
    SELECT rel.relname, con.conname, con.contype,
        ARRAY(SELECT attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
              JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i),
        coalesce(ref.relname, ''),
        ARRAY(SELECT attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
              JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i)
    FROM pg_constraint con
    JOIN pg_class rel ON rel.oid = con.conrelid
    LEFT JOIN pg_class ref ON ref.oid = con.confrelid
    WHERE rel.relname = ANY(%s) AND con.contype IN ('p', 'u', 'f')
"""

UNIQUE_INDEXES = """
    SELECT rel.relname, idx.relname,
        ARRAY(SELECT attname FROM unnest(i.indkey) k(n)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n)
    FROM pg_index i JOIN pg_class rel ON rel.oid = i.indrelid
    JOIN pg_class idx ON idx.oid = i.indexrelid
    WHERE rel.relname = ANY(%s) AND i.indisunique
"""


def _rows(sql: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(DISTRIBUTION)])
        return cursor.fetchall()


@pytest.mark.django_db
def test_every_key_of_a_thread_scoped_table_holds_its_distribution_column() -> None:
    keys = _rows(KEYS)
    indexes = _rows(UNIQUE_INDEXES)
    assert {row[0] for row in keys if row[2] == "p"} == set(DISTRIBUTION)
    missing = [
        (table, name, columns)
        for table, name, kind, columns, _ref, _ref_columns in keys
        if kind in ("p", "u") and DISTRIBUTION[table] not in columns
    ] + [
        (table, name, columns)
        for table, name, columns in indexes
        if DISTRIBUTION[table] not in columns and name not in KNOWN_EXCEPTIONS
    ]
    assert missing == []
    # The exceptions are still there (and still the only ones): the list cannot go stale.
    assert {name for _t, name, c in indexes if DISTRIBUTION[_t] not in c} == KNOWN_EXCEPTIONS


@pytest.mark.django_db
def test_foreign_keys_between_thread_scoped_tables_pair_the_distribution_columns() -> None:
    foreign = [row for row in _rows(KEYS) if row[2] == "f" and row[4] in DISTRIBUTION]
    assert foreign
    for table, name, _kind, columns, target, target_columns in foreign:
        # Citus: the distribution column on both sides, at the same place in the key.
        here, there = DISTRIBUTION[table], DISTRIBUTION[target]
        assert here in columns and there in target_columns, name
        assert columns.index(here) == target_columns.index(there), name


def _relations() -> Iterator[tuple[str, models.ForeignKey[Any, Any]]]:
    for model in (Thread, Run, Message, Report, RunRating, ShareLink):
        for field in model._meta.concrete_fields:
            if isinstance(field, models.ForeignKey) and field.related_model in (
                Thread,
                Run,
                Message,
            ):
                yield model._meta.db_table, field


@pytest.mark.django_db
def test_every_relation_inside_a_thread_has_a_database_constraint() -> None:
    constrained = {
        (table, column)
        for table, _name, kind, columns, _ref, _rc in _rows(KEYS)
        if kind == "f"
        for column in columns
    }
    unchecked = [
        f"{table}.{field.column}"
        for table, field in _relations()
        if (table, field.column) not in constrained
    ]
    # A parent thread is another thread (another shard): the ledger keeps it (deletion
    # unlinks children), as it keeps the event log (Event).
    assert unchecked == ["transcripts_thread.parent_thread_id"]


@pytest.mark.django_db
def test_the_event_log_is_lean_its_key_and_nothing_else() -> None:
    keys = [row for row in _rows(KEYS) if row[0] == "transcripts_event"]
    assert [(kind, columns) for _t, _n, kind, columns, _r, _rc in keys] == [
        ("p", ["run_id", "seq", "thread_id"])
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'transcripts_event'::regclass"
        )
        assert cursor.fetchone() == (1,)
        cursor.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'transcripts_event'::regclass"
            " AND attname = 'id' AND NOT attisdropped"
        )
        assert cursor.fetchone() == (0,)


def _refused(statement: Callable[[], object]) -> None:
    """The statement fails its foreign key at once (they are deferred to commit otherwise)."""
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        statement()


@pytest.mark.django_db
def test_a_row_pointing_into_another_thread_is_refused(team: Any) -> None:
    thread, other = conversation(turns=1), make_thread("other")
    run = Run.objects.filter(thread=thread).first()
    assert run is not None
    message = last_message(run)
    other_run = say(other, "elsewhere", fork_from=None)
    other_message = last_message(other_run)

    def message_of_another_threads_run() -> None:
        Message.objects.create(
            id="01ARZ3NDEKTSV4RRFFQ69G5FAV",
            thread=other,
            run=run,
            depth=9,
            role="user",
            created_at=run.created_at,
        )

    _refused(message_of_another_threads_run)
    _refused(lambda: Run.objects.filter(pk=other_run.pk).update(fork_from=message))
    _refused(lambda: Run.objects.filter(pk=other_run.pk).update(superseded_by=run))
    _refused(lambda: Message.objects.filter(pk=other_message.pk).update(parent=message))
    _refused(lambda: Thread.objects.filter(pk=other.pk).update(head=message))
    _refused(lambda: Report.objects.create(message=message, thread=other, reason="spam"))
    _refused(lambda: RunRating.objects.create(run=run, thread=other))
    _refused(
        lambda: ShareLink.objects.create(
            project=other.project, thread=other, leaf=message, secret_hash="x" * 64
        )
    )
    # The same rows inside their own thread are fine.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        Report.objects.create(message=message, thread=thread, reason="spam")
        RunRating.objects.create(run=run, thread=thread)


def _counts(thread_id: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in DISTRIBUTION:
            column = DISTRIBUTION[table]
            cursor.execute(
                f"SELECT count(*) FROM {table} WHERE {column} = %s",
                [to_uuid(thread_id)],
            )
            counts[table] = cursor.fetchone()[0]
    return counts


def _full_thread(team: Any) -> Thread:
    thread = make_thread("full", project=team.alpha)
    ask(thread, "question")
    run = say(thread, "answer")
    message = last_message(run)
    report_message(user=team.viewer, message=message, reason="spam")
    rate_run(user=team.editor, run=run, preferred=True)
    ShareLink.objects.create(
        project=team.alpha, thread=thread, leaf=message, secret_hash=thread.id * 2
    )
    make_run(thread, ("text-delta", {"delta": "still streaming"}), commit=False)
    return thread


@pytest.mark.django_db
def test_deleting_a_thread_takes_every_row_of_it(team: Any) -> None:
    thread = _full_thread(team)
    assert all(_counts(thread.id).values())
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM transcripts_thread WHERE id = %s", [to_uuid(thread.id)])
    # The database cascades to every table with a foreign key to the thread; the event log
    # has none (no check on the append path): the ledger deletes its rows.
    left = _counts(thread.id)
    assert left.pop("transcripts_event") > 0
    assert set(left.values()) == {0}


@pytest.mark.django_db
def test_the_ledger_deletes_a_thread_with_its_events(team: Any) -> None:
    thread, kept = _full_thread(team), _full_thread(team)
    before = _counts(kept.id)
    delete_threads([thread.id])
    assert set(_counts(thread.id).values()) == {0}
    assert _counts(kept.id) == before
    assert Event.objects.filter(run__thread=kept).count() == before["transcripts_event"]
