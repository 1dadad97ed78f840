"""A streamed export reads each batch's rows by primary key whatever the planner's statistics
(issue 30): a plain join of a batch's 1,000 ids hashed the whole message table when the
planner took it for small (25 ms a batch at 29,000 messages, 3 ms by key)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import conversation
from transcripts.selectors import exports

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "read",
    [
        lambda thread: list(exports.message_texts(thread, 1000)),
        lambda thread: list(exports.run_texts(thread, 1000)),
        lambda thread: list(exports.path_rows(exports.path_order(thread, thread.head_id), 1000)),
    ],
    ids=["messages", "runs", "path"],
)
def test_a_batch_is_read_by_key_when_a_hash_of_the_table_looks_cheaper(read: Any) -> None:
    thread = conversation(turns=3)
    for n in range(4):
        conversation(turns=2, title=f"other {n}")
    with connection.cursor() as cursor:
        # What a planner that takes the table for small concludes: a lookup per id dear, a
        # join of all the rows cheap (and no sequential scan, which tables this small get).
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute("SET LOCAL random_page_cost = 1000")
        cursor.execute("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            batches = read(thread)
        sql = next(q["sql"] for q in queries.captured_queries if "unnest" in q["sql"])
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert sum(len(batch) for batch in batches) == 6
    assert "Index Cond: (id = k.id)" in plan, plan
