"""A streamed export reads each batch's rows by primary key whatever the planner's statistics
(issue 30): a plain join of a batch's 1,000 ids hashed the whole message table when the
planner took it for small (25 ms a batch at 29,000 messages, 3 ms by key)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import conversation
from tests.support import read_where_joins_look_cheap
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
    batches, plan = read_where_joins_look_cheap(lambda: read(thread), "unnest")
    assert sum(len(batch) for batch in batches) == 6
    assert "Index Cond: (id = k.id)" in plan, plan
