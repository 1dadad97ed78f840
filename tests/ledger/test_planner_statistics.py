"""The planner's statistics of the message table that a bulk load must not throw off (issue 30,
"searches flat right after an import"): the threads among the messages and the runs are
counted as a share of them (migration 0027), so a plan that looks up one thread's messages or
runs stays an index lookup whatever store the last ANALYZE saw."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import conversation
from transcripts.models import Message, Run

pytestmark = pytest.mark.django_db


def _thread_id_statistics(model: type[Message] | type[Run]) -> tuple[float, list[str]]:
    """pg_stats' n_distinct of model's thread_id after an ANALYZE, and the column's options."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{table}"')
        cursor.execute(
            "SELECT n_distinct FROM pg_stats WHERE tablename = %s AND attname = 'thread_id'",
            [table],
        )
        (n_distinct,) = cursor.fetchone()
        cursor.execute(
            "SELECT attoptions FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'thread_id'",
            [table],
        )
        (options,) = cursor.fetchone()
    return float(n_distinct), list(options or [])


@pytest.mark.parametrize(("model", "share"), [(Message, -0.02), (Run, -0.05)])
def test_an_analyze_counts_the_threads_as_a_share_of_the_rows(
    model: type[Message] | type[Run], share: float
) -> None:
    # Three threads of a few messages and runs each: ANALYZE alone would store 3 (or
    # -3/rows), and a plan after a bulk load would take each thread for a third of the table.
    for n in range(3):
        conversation(turns=2, title=f"thread {n}")
    n_distinct, options = _thread_id_statistics(model)
    assert options == [f"n_distinct={share}"]
    assert n_distinct == pytest.approx(share)
