"""Helpers shared by test packages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import connection
from django.test.utils import CaptureQueriesContext

T = TypeVar("T")


def database_url_of_tests() -> str:
    """The URL of the database the tests run on (pytest-django's test database)."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    host = db["HOST"]
    if host.startswith("/"):
        return f"postgresql://{auth}@/{db['NAME']}?host={host}"
    return f"postgresql://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


def read_where_joins_look_cheap(read: Callable[[], T], marker: str) -> tuple[T, str]:
    """What read() returns, and the plan of its query whose SQL holds marker, both on what
    stale statistics tell the planner after a bulk load: a lookup per row dear, a join of all
    the rows cheap (no nested loop unless a query leaves no other way, and no sequential scan,
    which tables as small as a test's get anyway)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute("SET LOCAL random_page_cost = 1000")
        cursor.execute("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            result = read()
        sql = next(q["sql"] for q in queries.captured_queries if marker in q["sql"])
        cursor.execute(f"EXPLAIN {sql}")
        return result, "\n".join(line for (line,) in cursor.fetchall())
