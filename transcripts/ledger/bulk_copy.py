"""COPY into the event log and the message table: the fast path for many rows at once."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

import psycopg
from django.db import connection

from transcripts.events import CheckedEvent
from transcripts.ids import to_uuid
from transcripts.models import Message

MESSAGE_COLUMNS = (
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


def copy_message_rows(rows: Iterable[tuple[object, ...]]) -> None:
    """COPY message rows, each a tuple in the order of message_row, into the table."""
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY transcripts_message ({MESSAGE_COLUMNS}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


# COPY's text format: a field's backslashes, tabs and line breaks are written escaped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# Lines sent per write: few writes, and no copy of the whole batch in one string.
_LINES_PER_WRITE = 2048


def copy_field(value: str) -> str:
    """value as a field of COPY's text format."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.translate(_COPY_ESCAPES)
    return value


def copy_json_field(text: str) -> str:
    """JSON text as a field of COPY's text format (JSON holds no raw tab or line break)."""
    return text.replace("\\", "\\\\") if "\\" in text else text


EVENT_COLUMNS = "thread_id, run_id, seq, kind, data, at"
NULL = "\\N"  # COPY's text format for a null field


def copy_lines(
    pg: psycopg.Connection[tuple[object, ...]], table: str, columns: str, lines: list[str]
) -> None:
    """COPY lines already in the text format (fields escaped, tab-separated, one row and
    its line break each) into table: the import's rows skip a Python call per value.

    pg is the psycopg connection under Django's, so another thread may write while the
    caller's goes on (psycopg serializes the connection's use).
    """
    with pg.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for start in range(0, len(lines), _LINES_PER_WRITE):
            copy.write("".join(lines[start : start + _LINES_PER_WRITE]))


def event_lines(
    *, thread_hex: str, run_hex: str, events: Iterable[CheckedEvent], now_text: str
) -> list[str]:
    """Checked events of one run as lines of COPY's text format (EVENT_COLUMNS): appends and
    imports skip psycopg's adaptation of each value (a third of a 256-event append)."""
    prefix = f"{thread_hex}\t{run_hex}\t"
    return [
        f"{prefix}{e.seq}\t{copy_field(e.kind)}\t{copy_json_field(e.data_json)}\t"
        f"{e.at.isoformat() if e.at else now_text}\n"
        for e in events
    ]


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
