"""COPY into the event log and the message table: the fast path for many rows at once."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import connection

from transcripts.fields import to_uuid
from transcripts.models import Message


def copy_event_rows(rows: Iterable[tuple[Any, ...]]) -> None:
    """COPY (thread uuid, run uuid, seq, kind, data JSON, at) rows into the event log."""
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            "COPY transcripts_event (thread_id, run_id, seq, kind, data, at) FROM STDIN"
        ) as copy,
    ):
        for row in rows:
            copy.write_row(row)


_MESSAGE_COLUMNS = (
    "id, parent_id, run_id, depth, position, role, parts, metadata, created_at, active,"
    " thread_id, first_seq, last_seq, flag_reason"
)


class UuidCache:
    """ULIDs parsed once each: a message's id is its child's parent, and a run's id and its
    thread's come back on every one of their messages."""

    def __init__(self) -> None:
        self._parsed: dict[str, uuid.UUID] = {}

    def __call__(self, ulid: str) -> uuid.UUID:
        parsed = self._parsed.get(ulid)
        if parsed is None:
            parsed = self._parsed[ulid] = to_uuid(ulid)
        return parsed


def copy_message_rows(rows: Iterable[tuple[Any, ...]]) -> None:
    """COPY message rows, each a tuple in the order of message_row, into the table."""
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY transcripts_message ({_MESSAGE_COLUMNS}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def copy_messages(messages: Iterable[Message]) -> None:
    """COPY unsaved Message rows (as Message.from_projection makes them) into the table."""
    uuid_of = UuidCache()
    copy_message_rows(
        (
            uuid_of(m.id),
            uuid_of(m.parent_id) if m.parent_id else None,
            uuid_of(m.run_id),
            m.depth,
            m.position,
            m.role,
            json.dumps(m.parts, ensure_ascii=False),
            json.dumps(m.metadata, ensure_ascii=False),
            m.created_at,
            m.active,
            uuid_of(m.thread_id),
            m.first_seq,
            m.last_seq,
            m.flag_reason,
        )
        for m in messages
    )
