"""Admin lists over tables of millions of rows: a count that stops at a bound.

Django's admin counts the rows of the list it shows to number its pages: `SELECT COUNT(*)`
over the whole (filtered) table, which reads every row of a 20-million-row event log on every
page. Here the count reads at most COUNT_LIMIT + 1 rows; past that, the list shows PostgreSQL's
estimate of the total (the planner's row count for the same query), so the page costs the same
at any size.
"""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Model, QuerySet
from django.utils.functional import cached_property

from transcripts.jsonvalue import list_of, object_of

COUNT_LIMIT = 10_000


def estimated_count(queryset: QuerySet[Model]) -> int:
    """The planner's estimate of how many rows queryset holds (no row is read)."""
    compiler = queryset.query.get_compiler(using=queryset.db)
    sql, params = compiler.as_sql()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        row = cursor.fetchone()
    plan: object = row[0] if row else [{"Plan": {"Plan Rows": 0}}]
    if isinstance(plan, str):
        plan = json.loads(plan)
    rows = object_of(object_of(list_of(plan)[0]).get("Plan")).get("Plan Rows")
    return int(rows) if isinstance(rows, int | float) else 0


class BoundedCountPaginator(Paginator):  # type: ignore[type-arg]
    """A paginator that counts up to COUNT_LIMIT rows exactly and estimates past it."""

    @cached_property
    def count(self) -> int:
        objects = self.object_list
        if not isinstance(objects, QuerySet):
            return super().count
        bounded = objects.order_by()[: COUNT_LIMIT + 1].count()
        if bounded <= COUNT_LIMIT:
            return bounded
        return max(COUNT_LIMIT + 1, estimated_count(objects.order_by()))
