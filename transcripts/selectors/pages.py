"""Keyset pages and batch walks over any queryset (the order and cursors: pagination)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from django.db.models import Model, QuerySet

from transcripts.pagination import Keyset, Position

M = TypeVar("M", bound=Model)


def keyset_page(
    rows: QuerySet[M], keyset: Keyset, *, after: Position | None, limit: int
) -> list[M]:
    """Up to limit rows in keyset order, after position (None: from the start)."""
    ordered = rows.order_by(*keyset.order)
    if after is not None:
        ordered = ordered.filter(keyset.after(after))
    return list(ordered[:limit])


def keyset_batches(rows: QuerySet[M], keyset: Keyset, size: int) -> Iterator[list[M]]:
    """rows in keyset order, size at a time (memory holds one batch)."""
    after: Position | None = None
    while batch := keyset_page(rows, keyset, after=after, limit=size):
        yield batch
        after = keyset.position_of(batch[-1])
