"""ULID strings of ids read straight from uuid columns (raw SQL, values(), aggregates)."""

from __future__ import annotations

import uuid
from typing import Any

from transcripts.ids import ulid_from_uuid


def ulid_of(value: Any) -> str:
    """The ULID string of a uuid read from the database (a string stays as it is)."""
    return ulid_from_uuid(value) if isinstance(value, uuid.UUID) else str(value)


def ulid_from_hex(value: str) -> str:
    """The ULID string of a 32-digit hex id (as tree_rows returns them)."""
    return ulid_from_uuid(uuid.UUID(hex=value))
