"""A large import analyzes the tables it wrote once it has committed; a small one into a large
store leaves them to autovacuum (`transcripts.ledger.vacuum.analyze_after_import`)."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.db import connection, transaction

from transcripts.formats import Skips
from transcripts.formats.openai import import_openai
from transcripts.interchange.imports import import_trees
from transcripts.ledger.default_project import default_project
from transcripts.ledger.vacuum import analyze_after_import

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = ("transcripts_thread", "transcripts_run", "transcripts_message", "transcripts_event")


@pytest.fixture(autouse=True)
def _empty_store_analyzed() -> None:
    """Each test starts from an empty store whose statistics say so (the statistics outlive
    the rows other tests wrote)."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(TABLES)}")


def _import(threads: int, messages: int) -> None:
    """Import threads conversations of messages messages each, in one import."""
    trees = [
        import_openai(
            [
                {"role": "user" if turn % 2 == 0 else "assistant", "content": f"t{n} m{turn}"}
                for turn in range(messages)
            ]
        )[0]
        for n in range(threads)
    ]
    import_trees("openai", lambda _: trees, skips=Skips(), project=default_project())


def _last_analyze() -> dict[str, datetime | None]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [list(TABLES)],
        )
        return dict(cursor.fetchall())


def _messages_planned() -> float:
    """The planner's count of the messages (pg_class.reltuples, which ANALYZE sets)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'transcripts_message'")
        (count,) = cursor.fetchone()
    return float(count)


def _analyzed_since(before: dict[str, datetime | None]) -> list[str]:
    """The tables analyzed by hand since before was read."""
    after = _last_analyze()
    return sorted(table for table in TABLES if after[table] != before[table])


def test_a_large_import_analyzes_the_tables_it_wrote() -> None:
    before = _last_analyze()
    assert _messages_planned() <= 0  # empty (0), or never analyzed (-1)
    _import(threads=100, messages=20)
    assert _analyzed_since(before) == sorted(TABLES)
    assert _messages_planned() == 2_000


def test_a_small_import_into_a_large_store_does_not_analyze() -> None:
    _import(threads=100, messages=20)  # 2,000 messages: analyzed
    analyzed = _last_analyze()
    assert analyzed["transcripts_message"] is not None
    # 60 messages would be analyzed in an empty store (autovacuum's threshold: 50 rows), not
    # in one of 2,000 (50 + 10 % of them).
    _import(threads=1, messages=60)
    assert _analyzed_since(analyzed) == []


def test_the_same_import_into_an_empty_store_analyzes_its_messages() -> None:
    before = _last_analyze()
    _import(threads=1, messages=60)
    # One thread and its run are fewer rows than autovacuum's threshold: left to it.
    assert _analyzed_since(before) == ["transcripts_event", "transcripts_message"]


def test_inside_a_transaction_nothing_is_analyzed_until_the_commit() -> None:
    before = _last_analyze()
    with transaction.atomic():
        _import(threads=100, messages=20)
        assert analyze_after_import(threads=100, messages=2_000) == []
        assert _analyzed_since(before) == []
    assert _analyzed_since(before) == sorted(TABLES)
