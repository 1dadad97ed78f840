"""The reads of a streamed export (issue 30): a thread's messages and runs in batches.

First the order: the ids of the thread's messages (by depth, then id) and of its runs (by
creation), 16 bytes each, in one query apiece; then the rows themselves, a batch at a time,
each row looked up by its primary key in a fenced LATERAL (a plain join of a batch's 1,000
ids hashed the whole message table when the planner took the table for small: 25 ms a batch
at 29,000 messages, against 3 ms by key). Memory holds those ids and one batch, never the
thread's text; no cursor outlives its query (a pooler in transaction mode, PgBouncer,
changes nothing); and each batch is an index lookup, where a keyset on (depth, id) would
scan the whole thread again for each batch (no index has the thread, the depth and the id).

The rows come as PostgreSQL writes them (`MessageText`, `RunText`): jsonb as its text, with
whether it holds a number, times as Python's isoformat() spells them, ids as 16 bytes; the
export writes that text as it is (`interchange.export_stream`), decoding nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.core.exceptions import ValidationError
from django.db import connection

from transcripts.ids import to_uuid
from transcripts.models import Message, Run, Thread


def is_message_of(thread: Thread, message_id: str) -> bool:
    """Whether message_id (spelled as the export spells ids) names a message of thread."""
    try:
        found = Message.objects.filter(thread=thread, id=message_id).values_list("id", flat=True)
        return found.first() == message_id
    except ValidationError:  # not a ULID at all
        return False


def _order(table: type[Message] | type[Run], thread: Thread, *order: str) -> bytes:
    """The ids of thread's rows of table in order, 16 bytes each, as PostgreSQL joins them
    (one value: no Python object per row)."""
    name = table._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT string_agg(uuid_send(id), ''::bytea ORDER BY {', '.join(order)}) "
            f'FROM "{name}" WHERE thread_id = %s',
            [to_uuid(thread.id)],
        )
        row = cursor.fetchone()
    return bytes(row[0]) if row is not None and row[0] is not None else b""


def _batches(order: bytes, size: int) -> Iterator[str]:
    """The ids of order, size at a time, as one PostgreSQL uuid[] literal each: a single
    parameter (a thousand ids bound one by one cost more than the rows they fetch)."""
    step = 16 * size
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        yield "{" + ",".join(chunk[at : at + 16].hex() for at in range(0, len(chunk), 16)) + "}"


def _iso(column: str, *, zone: str) -> str:
    """SQL for column's instant in UTC as Python's isoformat() writes it (microseconds only
    when there are any), ending in zone ("+00:00", or "Z" as `times.to_iso` writes it)."""
    moment = f"({column} AT TIME ZONE 'UTC')"
    return (
        f"to_char({moment}, CASE WHEN date_trunc('second', {moment}) = {moment} "
        f"""THEN 'YYYY-MM-DD"T"HH24:MI:SS' ELSE 'YYYY-MM-DD"T"HH24:MI:SS.US' END) || '{zone}'"""
    )


def _json(column: str) -> str:
    """SQL for a jsonb column's text ("null" for SQL's null), then whether it holds any
    number (two columns)."""
    return (
        f"coalesce({column}::text, 'null'), "
        f"coalesce(jsonb_path_exists({column}, 'strict $.** ? (@.type() == \"number\")'), false)"
    )


def _by_key(alias: str) -> str:
    """SQL that ends a batch's read: the rows of "{table}" whose ids the parameter lists, as
    alias, each looked up by its primary key (fenced, so no plan joins the whole table), in
    the ids' order."""
    return (
        "FROM unnest(%s::uuid[]) WITH ORDINALITY AS k (id, n) "
        f'CROSS JOIN LATERAL (SELECT * FROM "{{table}}" WHERE id = k.id OFFSET 0) {alias} '
        "ORDER BY k.n"
    )


# A message as a streamed canonical export writes it, mostly as PostgreSQL's text: its id and
# parent id as 16 bytes each (uuid_send), its role as a JSON string, its parts as jsonb's
# text (and whether it holds a number), created_at as isoformat() spells it, its metadata as
# jsonb's text (and whether it holds a number).
MessageText = tuple[bytes, bytes | None, str, str, bool, str, str, bool]
_MESSAGES = (
    "SELECT uuid_send(m.id), uuid_send(m.parent_id), to_json(m.role)::text, "
    f"{_json('m.parts')}, {_iso('m.created_at', zone='+00:00')}, {_json('m.metadata')} "
    + _by_key("m")
)
# A run likewise: id, status (JSON), fork_from, superseded_by (16 bytes each or None),
# generator, model (JSON), parameters, metadata, usage, error (jsonb text and whether it holds
# a number each, error "null" when there is none), created_at and finished_at (as
# `times.to_iso` writes them, finished None when unfinished), last_seq, and the ids of its
# messages in order (16 bytes each, joined).
RunText = tuple[
    bytes, str, bytes | None, bytes | None, str, str, str, bool, str, bool, str, bool, str, bool,
    str, str | None, int, bytes | None,
]  # fmt: skip
_RUNS = (
    "SELECT uuid_send(r.id), to_json(r.status)::text, uuid_send(r.fork_from_id), "
    "uuid_send(r.superseded_by_id), to_json(r.generator)::text, to_json(r.model)::text, "
    f"{_json('r.parameters')}, {_json('r.metadata')}, {_json('r.usage')}, {_json('r.error')}, "
    f"{_iso('r.created_at', zone='Z')}, {_iso('r.finished_at', zone='Z')}, r.last_seq, "
    "(SELECT string_agg(uuid_send(m.id), ''::bytea ORDER BY m.position, m.id) "
    ' FROM "{messages}" m WHERE m.run_id = r.id) ' + _by_key("r")
)


# Every message of a thread for its whole tree (`interchange.export.thread_tree`): id, parent
# id, run id (16 bytes each), role, parts and metadata as jsonb's text, created_at as
# isoformat() spells it, position in its run.
TreeRow = tuple[bytes, bytes | None, bytes, str, str, str, str, int]
_TREE = (
    "SELECT uuid_send(id), uuid_send(parent_id), uuid_send(run_id), role, parts::text, "
    f"metadata::text, {_iso('created_at', zone='+00:00')}, position "
    'FROM "{table}" WHERE thread_id = %s ORDER BY depth, id'
)


def tree_rows(thread: Thread, size: int) -> Iterator[list[TreeRow]]:
    """The thread's messages, parents before children (by depth, then id), size at a time,
    in one query read by a server-side cursor (as QuerySet.iterator): no Django field
    converts a value (the caller decodes the JSON it keeps)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(_TREE.format(table=Message._meta.db_table), [to_uuid(thread.id)])
        while rows := cursor.fetchmany(size):
            yield [
                (bytes(r[0]), _bytes(r[1]), bytes(r[2]), r[3], r[4], r[5], r[6], r[7]) for r in rows
            ]


def message_texts(thread: Thread, size: int) -> Iterator[list[MessageText]]:
    """The thread's messages, parents before children (by depth, then id), size at a time,
    as text PostgreSQL writes (`MessageText`): no JSON is decoded."""
    sql = _MESSAGES.format(table=Message._meta.db_table)
    for ids in _batches(_order(Message, thread, "depth", "id"), size):
        with connection.cursor() as cursor:
            cursor.execute(sql, [ids])
            rows = cursor.fetchall()
        yield [(bytes(r[0]), _bytes(r[1]), *r[2:]) for r in rows]


def run_texts(thread: Thread, size: int) -> Iterator[list[RunText]]:
    """The thread's runs, oldest first, size at a time, as text PostgreSQL writes
    (`RunText`), each with the ids of its messages in its order; no snapshot."""
    sql = _RUNS.format(table=Run._meta.db_table, messages=Message._meta.db_table)
    for ids in _batches(_order(Run, thread, "created_at", "id"), size):
        with connection.cursor() as cursor:
            cursor.execute(sql, [ids])
            rows = cursor.fetchall()
        yield [
            (bytes(r[0]), r[1], _bytes(r[2]), _bytes(r[3]), *r[4:17], _bytes(r[17])) for r in rows
        ]


def _bytes(value: bytes | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)


# Whether a message's metadata holds the record of the ThreadProtocol actions it was imported
# from (`formats.threadprotocol_parts.has_record`: metadata.extra.threadprotocol.actions is
# truthy as Python reads it).
_RECORDED = "metadata->'extra'->'threadprotocol'->'actions'"
_HAS_RECORD = (
    f"coalesce(CASE jsonb_typeof({_RECORDED}) WHEN 'array' THEN {_RECORDED} <> '[]' "
    f"WHEN 'object' THEN {_RECORDED} <> jsonb_build_object() "
    f"WHEN 'string' THEN {_RECORDED} <> '\"\"' "
    f"WHEN 'number' THEN {_RECORDED} <> '0' WHEN 'boolean' THEN {_RECORDED} = 'true' "
    "ELSE false END, false)"
)
# One scan of the thread's messages for a ThreadProtocol header: the agentId (jsonb's text,
# "null" when absent) of each message `formats.threadprotocol.derived_agent` writes with an
# agent (not imported with a record; an assistant's, or one with reasoning or a tool call),
# each once, in the order of its first message by depth and id; and whether any message may
# name, in its actions, an agent no header knows before they are written (one with a record,
# a tool message with text or a file, a role the export does not know).
_AGENTS = (
    "SELECT agent, bool_or(named) FROM (SELECT CASE WHEN NOT recorded AND (role = "
    "'assistant' OR jsonb_path_exists(parts, "
    '\'$[*] ? (@.type == "reasoning" || @.type == "tool-call")\')) '
    "THEN coalesce(metadata->'agentId', 'null')::text END AS agent, "
    "recorded OR role NOT IN ('user', 'system', 'assistant', 'tool') OR (role = 'tool' AND "
    'jsonb_path_exists(parts, \'$[*] ? (@.type == "text" || @.type == "file")\')) '
    "AS named, depth, id FROM (SELECT role, parts, metadata, depth, id, "
    + _HAS_RECORD
    + ' AS recorded FROM "{table}" WHERE thread_id = %s OFFSET 0) AS m) AS a '
    # Grouped (a hash of a few agents), each first by depth, then id (uuid's text sorts as
    # its bytes).
    "GROUP BY agent ORDER BY min(to_char(depth, 'FM0000000000') || id::text COLLATE \"C\")"
)


def agent_ids(thread: Thread) -> tuple[list[str], bool]:
    """For a ThreadProtocol header, in one scan of thread's messages: the agentId (jsonb's
    text) of every message written with an agent, each once, in the thread's order of its
    first message; and whether a message may name an agent only its actions show."""
    with connection.cursor() as cursor:
        cursor.execute(_AGENTS.format(table=Message._meta.db_table), [to_uuid(thread.id)])
        rows = cursor.fetchall()
    return [agent for agent, _ in rows if agent is not None], any(named for _, named in rows)


def last_message(thread: Thread) -> str | None:
    """The thread's last message by depth, then id (the leaf of a path without one)."""
    found = Message.objects.filter(thread=thread).order_by("-depth", "-id")
    return found.values_list("id", flat=True).first()


# The path from a message up to the root, its ids root first (16 bytes each), each level a
# lateral lookup by primary key (LIMIT keeps it apart): joined, the planner may hash the
# whole table once per level (it did, with a fresh import's statistics).
_PATH = (
    "WITH RECURSIVE up AS ("
    'SELECT id, parent_id, 0 AS n FROM "{table}" WHERE id = %s AND thread_id = %s '
    "UNION ALL SELECT m.id, m.parent_id, u.n + 1 FROM up u "
    'CROSS JOIN LATERAL (SELECT id, parent_id FROM "{table}" p '
    "WHERE p.id = u.parent_id LIMIT 1) m) "
    "SELECT string_agg(uuid_send(id), ''::bytea ORDER BY n DESC) FROM up"
)


def path_order(thread: Thread, leaf: str) -> bytes:
    """The ids of the path from the root of thread down to leaf, 16 bytes each."""
    with connection.cursor() as cursor:
        cursor.execute(
            _PATH.format(table=Message._meta.db_table), [to_uuid(leaf), to_uuid(thread.id)]
        )
        row = cursor.fetchone()
    return b"" if row is None or row[0] is None else bytes(row[0])


# A message of a path as thread_tree reads it: id, parent id (16 bytes each), role, parts and
# metadata as jsonb's text, created_at as isoformat() spells it.
PathRow = tuple[bytes, bytes | None, str, str, str, str]
_PATH_ROWS = (
    "SELECT uuid_send(m.id), uuid_send(m.parent_id), m.role, m.parts::text, "
    f"{_iso('m.created_at', zone='+00:00')}, m.metadata::text " + _by_key("m")
)


def path_rows(order: bytes, size: int) -> Iterator[list[PathRow]]:
    """The messages order names (`path_order`), in its order, size at a time."""
    sql = _PATH_ROWS.format(table=Message._meta.db_table)
    for ids in _batches(order, size):
        with connection.cursor() as cursor:
            cursor.execute(sql, [ids])
            rows = cursor.fetchall()
        yield [(bytes(r[0]), _bytes(r[1]), r[2], r[3], r[4], r[5]) for r in rows]


# The leaves of a thread (messages no message answers), by depth, then id: id (16 bytes) and
# created_at as isoformat() spells it (thread_tree's text): the structure the child threads
# of a ThreadProtocol export are ordered by, without any message's text.
_LEAVES = (
    f"SELECT uuid_send(m.id), {_iso('m.created_at', zone='+00:00')} "
    'FROM "{table}" m WHERE m.thread_id = %s AND NOT EXISTS '
    '(SELECT 1 FROM "{table}" c WHERE c.parent_id = m.id AND c.thread_id = m.thread_id) '
    "ORDER BY m.depth, m.id"
)


def leaf_rows(thread: Thread) -> list[tuple[bytes, str]]:
    """The thread's leaves, by depth then id: (id as 16 bytes, created_at's text)."""
    with connection.cursor() as cursor:
        cursor.execute(_LEAVES.format(table=Message._meta.db_table), [to_uuid(thread.id)])
        rows = cursor.fetchall()
    return [(bytes(key), created) for key, created in rows]
