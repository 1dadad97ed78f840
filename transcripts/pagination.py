"""Opaque cursors for keyset pagination, shared by the API and the pages."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any


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
