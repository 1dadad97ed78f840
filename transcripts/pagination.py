"""Keyset pagination: opaque cursors, the positions they hold, and the order they follow.

A cursor is URL-safe base64 of a JSON list (datetimes as ISO text); a `Keyset` is a sort on
one field with the id as tie-break, and says which rows come after a position. The queries
that read a page are `selectors.pages`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Model, Q

from transcripts.ids import is_ulid
from transcripts.times import parse_iso

Position = tuple[Any, ...]
Parser = Callable[[Any], Any]


def encode_cursor(*values: Any) -> str:
    """An opaque cursor holding values (datetimes as ISO text)."""
    plain = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    raw = json.dumps(plain, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, arity: int) -> list[Any] | None:
    """The values of a cursor made by encode_cursor, or None when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (ValueError, RecursionError, binascii.Error):
        return None
    if not isinstance(values, list) or len(values) != arity:
        return None
    return values


def decode_position(cursor: str, *parsers: Parser) -> Position | None:
    """The position a cursor holds, one value per parser (each gives None for a value it
    refuses), or None when the cursor is not one of ours."""
    values = decode_cursor(cursor, len(parsers))
    if values is None:
        return None
    position = tuple(parse(value) for parse, value in zip(parsers, values, strict=True))
    return None if any(value is None for value in position) else position


def moment(value: Any) -> datetime | None:
    """A cursor's ISO time as an aware datetime, else None."""
    return parse_iso(value) if isinstance(value, str) else None


def ulid(value: Any) -> str | None:
    """A cursor's ULID, else None."""
    return value if isinstance(value, str) and is_ulid(value) else None


def text(value: Any) -> str | None:
    """A cursor's text, else None."""
    return value if isinstance(value, str) else None


def integer(value: Any) -> int | None:
    """A cursor's integer (not a bool), else None."""
    return value if type(value) is int else None


@dataclass(frozen=True)
class Keyset:
    """A sort on key then id (the tie-break), descending or not."""

    key: str
    desc: bool = False

    @property
    def order(self) -> list[str]:
        """The order_by fields."""
        fields = [self.key] if self.key == "id" else [self.key, "id"]
        return [f"-{f}" for f in fields] if self.desc else fields

    def after(self, position: Position) -> Q:
        """The rows after position: (key value, id), or (id,) when the key is the id."""
        op = "lt" if self.desc else "gt"
        if self.key == "id":
            return Q(**{f"id__{op}": position[0]})
        value, row_id = position
        return Q(**{f"{self.key}__{op}": value}) | Q(**{self.key: value, f"id__{op}": row_id})

    def position_of(self, row: Model) -> Position:
        """Where row stands in this order."""
        return (row.pk,) if self.key == "id" else (getattr(row, self.key), row.pk)

    def cursor(self, row: Model) -> str:
        """The cursor of the page that continues after row."""
        return encode_cursor(*self.position_of(row))
