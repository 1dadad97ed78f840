"""Exports that write as they read (issue 30): canonical JSON, ThreadProtocol and its JSON
Lines, the same bytes as `export_thread` writes whole.

`stream_thread` checks everything that can refuse an export first (the format, `branches`,
`leaf`), so a 4xx still comes before any byte; then its pieces of text are written as they
are made:

- canonical: the thread's header at once (its own row, read already), then the messages and
  the runs (with their message ids, and their events when asked) in batches by primary key
  after one read of their order (`selectors.exports`), then its scores and feedback. A
  message or run is written from PostgreSQL's own text of its values (jsonb's text, times
  by to_char), not decoded into Python and encoded again: the same bytes (`_json` says why,
  tests/interchange/test_export_text.py proves it), a third of the time. Memory holds the
  order (16 bytes a row) and one batch, never the thread's text.
- ThreadProtocol: its header (the agents) depends on every message, so PostgreSQL answers
  for them first (the agents messages name, and whether a message of the path could name one
  only its actions show: then the path is read once more, first); the path's ids come in one
  recursive query, its messages a batch at a time by primary key, and each message's actions
  are written as it is read (`formats.threadprotocol.threadprotocol_stream`: the whole
  export's own functions). Memory holds the path's ids and one batch. With `branches=all`
  the main thread is written so, then each child thread from the tree's structure (its
  leaves, each one's path ids): the actions it shares with the main thread copied from the
  main thread's text, kept as it was written, the rest of its path read a batch at a time
  (`_json_lines`).

The other formats are written whole, as before, and sent in pieces.

A failure after the first byte (the database going away mid-export) cannot become an error
status any more: the exception ends the response without its last chunk, so the client sees
a cut-off transfer (and a document that does not parse), never a complete-looking 200.
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import orjson

from transcripts.errors import NotFound
from transcripts.formats.canonical import canonical_head
from transcripts.formats.document import TreeThread
from transcripts.formats.threadprotocol import (
    BranchMarks,
    Forks,
    threadprotocol_branch_marks,
    threadprotocol_branch_tail_stream,
    threadprotocol_leaf_age,
    threadprotocol_path_agents,
    threadprotocol_stream,
)
from transcripts.formats.threadprotocol_derive import DEFAULT_AGENT
from transcripts.ids import ulid_from_bytes
from transcripts.interchange.export import (
    JSON_LINES,
    chunks,
    events_by_run,
    export_spec,
    export_thread,
    judgement_of,
    no_collection,
    tree_of,
    wants_every_branch,
)
from transcripts.jsonvalue import JsonObject, JsonValue
from transcripts.message_schema import message_object
from transcripts.models import Thread
from transcripts.selectors.exports import (
    MessageText,
    RunText,
    agent_ids,
    is_message_of,
    last_message,
    leaf_rows,
    message_texts,
    path_order,
    path_rows,
    run_texts,
)
from transcripts.times import to_iso

T = TypeVar("T")
MESSAGE_BATCH = 1000
RUN_BATCH = 500
ACTION_BATCH = 200
# 256 KB: each chunk costs a hop to the database thread under ASGI (14 for 3.5 MB).
CHUNK_BYTES = 1 << 18
# The main thread's actions a JSON Lines export keeps in memory for its child threads; past
# that, in a temporary file.
SPOOL_MEMORY = 1 << 20

# json.dumps(value, ensure_ascii=False), without making an encoder per value.
_encode = json.JSONEncoder(ensure_ascii=False).encode


@dataclass(frozen=True)
class ExportStream:
    """An export checked and ready to write: its text comes piece by piece."""

    pieces: Iterator[str | bytes]  # text, or text already UTF-8
    content_type: str
    filename: str


def stream_thread(
    thread: Thread,
    fmt: str,
    *,
    leaf: str | None = None,
    with_events: bool = False,
    branches: str | None = None,
) -> ExportStream:
    """export_thread's document, written as it is read; refusals (InvalidInput, NotFound)
    are raised here, before any piece."""
    spec = export_spec(fmt)
    every_branch = wants_every_branch(branches, fmt)
    filename = f"thread-{thread.id}.{spec.extension}"
    if fmt == "canonical":
        if leaf is not None and not is_message_of(thread, leaf):
            raise NotFound("leaf is not a message of this thread", leaf=leaf)
        return ExportStream(_canonical(thread, leaf, with_events), spec.content_type, filename)
    if fmt == "threadprotocol":
        if leaf is not None and not is_message_of(thread, leaf):
            raise NotFound("leaf is not a message of this thread", leaf=leaf)
        if every_branch:
            lines = _json_lines(thread, leaf)
            return ExportStream(lines, JSON_LINES, f"thread-{thread.id}.jsonl")
        return ExportStream(_threadprotocol(thread, leaf), spec.content_type, filename)
    whole = export_thread(thread, fmt, leaf=leaf, with_events=with_events, branches=branches)
    return ExportStream(chunks(whole.content), whole.content_type, whole.filename)


def chunked(pieces: Iterator[str | bytes], size: int | None = None) -> Iterator[bytes]:
    """pieces as UTF-8, the first at once (the first byte should not wait for a full chunk),
    the rest joined into chunks of about size bytes (CHUNK_BYTES)."""
    size = size or CHUNK_BYTES
    pending: list[bytes] = []
    held = 0
    first = True
    for piece in pieces:
        encoded = piece if isinstance(piece, bytes) else piece.encode()
        if first:
            first = False
            yield encoded
            continue
        pending.append(encoded)
        held += len(encoded)
        if held >= size:
            yield b"".join(pending)
            pending, held = [], 0
    if pending:
        yield b"".join(pending)


def _canonical(thread: Thread, leaf: str | None, with_events: bool) -> Iterator[str]:
    """The canonical document (`formats.canonical.export_canonical`), piece by piece."""
    head = canonical_head(
        thread_id=thread.id,
        title=thread.title,
        metadata=thread.metadata,
        agents=thread.agents,
        parent_thread_id=thread.parent_thread_id,
        created_at=to_iso(thread.created_at),
        updated_at=to_iso(thread.updated_at),
        active_leaf=leaf or thread.head_id,
    )
    yield _encode(head)[:-1] + ', "messages": ['
    separator = ""
    messages = message_texts(thread, MESSAGE_BATCH)
    while batch := _next(messages):
        text = separator + ", ".join(map(_message_text, batch))
        del batch
        yield text
        separator = ", "
    yield '], "runs": ['
    separator = ""
    run_rows = run_texts(thread, RUN_BATCH)
    while runs := _next(run_rows):
        if with_events:
            ids = [ulid_from_bytes(run[0]) for run in runs]
            events = events_by_run(thread, ids)
            found = [_encode(events.get(key, [])) for key in ids]
            items = [_run_text(run, text) for run, text in zip(runs, found, strict=True)]
        else:
            items = [_run_text(run, None) for run in runs]
        text = separator + ", ".join(items)
        del items, runs
        yield text
        separator = ", "
    yield "]"
    scores, feedback = judgement_of(thread)
    if scores:
        yield ', "scores": ' + _encode(scores)
    if feedback:
        yield ', "feedback": ' + _encode(feedback)
    yield "}"


# A number with a fraction in jsonb's text (jsonb writes numbers in plain decimals, and only
# after "[", ", " or ": ", or alone), or text that looks like one inside a string.
_FRACTION = re.compile(r"(?:^|\[|, |: )-?[0-9]+\.")


def _json(text: str, numbers: bool) -> str:
    """jsonb's text of a value as `_encode(json.loads(text))` writes it (what the export
    wrote when it read values into Python first).

    The two agree on everything but numbers with a fraction: jsonb's text has the same
    separators and escapes, and json.loads keeps its key order; an integer comes back with
    the same digits. A fraction may not (json.loads makes a float: 1.10 becomes 1.1,
    0.0000001 becomes 1e-07), so text holding anything like one goes through Python.
    numbers: whether the value holds any number (PostgreSQL's answer; without one the text
    is not searched)."""
    if not numbers or _FRACTION.search(text) is None:
        return text
    return _encode(json.loads(text))


def _message_text(row: MessageText) -> str:
    """A message of the canonical document (`message_schema.message_object`'s fields in its
    order), from its row as PostgreSQL wrote it."""
    key, parent, role, parts, parts_numbers, created, metadata, metadata_numbers = row
    parent_id = "null" if parent is None else f'"{ulid_from_bytes(parent)}"'
    return (
        f'{{"id": "{ulid_from_bytes(key)}", "parentMessageId": {parent_id}, "role": {role}, '
        f'"parts": {_json(parts, parts_numbers)}, "createdAt": "{created}", '
        f'"metadata": {_json(metadata, metadata_numbers)}}}'
    )


def _ulid_json(value: bytes | None) -> str:
    return "null" if value is None else f'"{ulid_from_bytes(value)}"'


def _run_text(row: RunText, events: str | None) -> str:
    """A run of the canonical document (`export.run_item`'s fields in its order), from its
    row as PostgreSQL wrote it, and its events' text when they are asked for."""
    (key, status, fork_from, superseded_by, generator, model, parameters, parameters_numbers,
     metadata, metadata_numbers, usage, usage_numbers, error, error_numbers, created, finished,
     last_seq, message_ids) = row  # fmt: skip
    ids = b"" if message_ids is None else message_ids
    listed = ", ".join(f'"{ulid_from_bytes(ids[at : at + 16])}"' for at in range(0, len(ids), 16))
    finished_at = "null" if finished is None else f'"{finished}"'
    return (
        f'{{"id": "{ulid_from_bytes(key)}", "status": {status}, '
        f'"forkFromMessageId": {_ulid_json(fork_from)}, '
        f'"supersededBy": {_ulid_json(superseded_by)}, "generator": {generator}, '
        f'"model": {model}, "parameters": {_json(parameters, parameters_numbers)}, '
        f'"metadata": {_json(metadata, metadata_numbers)}, "usage": {_json(usage, usage_numbers)}, '
        f'"error": {_json(error, error_numbers)}, "createdAt": "{created}", '
        f'"finishedAt": {finished_at}, "lastSeq": {last_seq}, "messageIds": [{listed}]'
        + ("}" if events is None else f', "events": {events}}}')
    )


def _next(batches: Iterator[list[T]]) -> list[T]:
    """The next batch, read with the cyclic collector held off (see `no_collection`); [] at
    the end. Never across a yield: other requests of the process keep their collector."""
    with no_collection():
        return next(batches, [])


def _document(document: JsonObject, key: str) -> Iterator[str | bytes]:
    """json.dumps(document, ensure_ascii=False) in pieces: the list at key a batch at a time."""
    items = document[key]
    assert isinstance(items, list)
    batches = (items[start : start + ACTION_BATCH] for start in range(0, len(items), ACTION_BATCH))
    yield from _around(document, key, batches)


def _around(
    document: JsonObject,
    key: str,
    batches: Iterator[list[JsonObject]],
    *,
    written: Iterable[bytes] = (),
    spool: _Spool | None = None,
) -> Iterator[str | bytes]:
    """json.dumps(document, ensure_ascii=False) with the list at key made of batches, each
    written as it comes; written: the list's first items as JSON text already (", " between
    them), before the batches; spool: keeps the text of the batches too."""
    # A placeholder no document holds (a NUL is written escaped, and the rest is random).
    marker = f"\x00{uuid.uuid4().hex}"
    head, tail = _encode({**document, key: marker}).split(_encode(marker), 1)
    yield head + "["
    separator = ""
    for piece in written:
        yield piece
        separator = ", "
    for batch in batches:
        if batch:
            text = _encode(batch)[1:-1]
            yield separator + text
            separator = ", "
            if spool is not None:
                spool.add(text)
    yield "]" + tail


class _Spool:
    """The main thread's actions as its document wrote them (JSON text, ", " between them),
    kept for the child threads, whose documents begin with the same actions up to their
    fork: in memory up to SPOOL_MEMORY bytes, then in a temporary file. `ends` holds where
    the text of the first n messages' actions ends (n a message children fork after)."""

    def __init__(self) -> None:
        self.file = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115
        self.ends: dict[int, int] = {}

    def add(self, text: str) -> None:
        if self.file.tell():
            self.file.write(b", ")
        self.file.write(text.encode())

    def mark(self, messages: int) -> None:
        self.ends[messages] = self.file.tell()

    def prefix(self, messages: int) -> Iterator[bytes]:
        """The text of the first messages' actions, CHUNK_BYTES at a time."""
        left = self.ends[messages]
        self.file.seek(0)
        while left > 0:
            chunk = self.file.read(min(left, CHUNK_BYTES))
            if not chunk:
                raise RuntimeError("the spooled actions ended early")
            left -= len(chunk)
            yield chunk

    def close(self) -> None:
        self.file.close()


def _cut_at_forks(
    batches: Iterator[list[T]], size: int, forks: Forks, spool: _Spool
) -> Iterator[list[T]]:
    """`_joined`, but a list also ends after each message children fork after (in forks.at,
    which the path's reading sets before its first message), where spool marks the end of
    the actions written so far. batches: one per message with actions (none for one
    without), each given right after forks stepped over its message."""
    pending: list[T] = []
    points: list[int] = []
    first = True
    for batch in batches:
        if first:
            points, first = sorted(forks.at, reverse=True), False
        # Messages read before this one that children fork after: all that came is theirs.
        while points and points[-1] < forks.read:
            if pending:
                yield pending
                pending = []
            spool.mark(points.pop())
        pending.extend(batch)
        if points and points[-1] == forks.read:
            yield pending
            pending = []
            spool.mark(points.pop())
        elif len(pending) >= size:
            yield pending
            pending = []
    if pending:
        yield pending
    for point in sorted(forks.at):
        if point not in spool.ends:
            spool.mark(point)


def _threadprotocol(thread: Thread, leaf: str | None) -> Iterator[str | bytes]:
    """The ThreadProtocol document of the active path (or the path to leaf), written as the
    path is read: its header from the thread's row and what PostgreSQL says of its messages
    (the agents they name), then its actions a batch of messages at a time."""
    start = _start(thread, leaf)
    own, derived, may_name = _header(thread)
    yield from _main(own, derived, may_name, lambda: _lazy_path(thread, start))


def _start(thread: Thread, leaf: str | None) -> str | None:
    """The leaf of the main thread: leaf, else the head, else the last message."""
    start: str | None = leaf or thread.head_id
    if start is None or not is_message_of(thread, start):
        start = last_message(thread)
    return start


def _header(thread: Thread) -> tuple[TreeThread, list[str], bool]:
    """The thread's own fields (no messages), `derived_agent` of its messages in its order,
    and whether a message may name an agent only its actions show (`agent_ids`)."""
    own = tree_of(thread, [], active_leaf=None)
    texts, may_name = agent_ids(thread)
    return own, [str(json.loads(text) or DEFAULT_AGENT) for text in texts], may_name


def _order(thread: Thread, leaf: str | None) -> bytes:
    return b"" if leaf is None else path_order(thread, leaf)


def _lazy_path(thread: Thread, leaf: str | None) -> Iterator[JsonObject]:
    """`_path` of the path to leaf, its ids read when its first message is asked for (after
    the header is written)."""
    yield from _path(_order(thread, leaf))


def _main(
    own: TreeThread,
    derived: list[str],
    may_name: bool,
    paths: Callable[[], Iterator[JsonObject]],
    forks: Forks | None = None,
    path: Iterator[JsonObject] | None = None,
    spool: _Spool | None = None,
) -> Iterator[str | bytes]:
    """The main document; paths: a new reading of its path each call (path: the one to
    write, when given); forks and spool: kept for the child threads as it is written."""
    # Only a message with a record (or a tool message with text) can name an agent that is
    # neither the thread's nor derived: when the thread has one, the path is read once more,
    # first; else the header goes before the path is looked for.
    agents = []
    if may_name:
        agents = threadprotocol_path_agents(own, derived, paths())
    path = paths() if path is None else path
    shell, actions = threadprotocol_stream(
        own, derived=derived, agents=agents, path=path, forks=forks
    )
    if forks is None or spool is None:
        yield from _around(shell, "actions", _joined(actions, ACTION_BATCH))
    else:
        batches = _cut_at_forks(actions, ACTION_BATCH, forks, spool)
        yield from _around(shell, "actions", batches, spool=spool)


def _path(order: bytes) -> Iterator[JsonObject]:
    """The messages of order (`path_order`, root first) as thread_tree reads them, a batch
    of rows at a time."""
    loads = _loads
    rows = path_rows(order, MESSAGE_BATCH)
    while batch := _next(rows):
        for key, parent, role, parts, created, metadata in batch:
            yield message_object(
                ulid_from_bytes(key),
                None if parent is None else ulid_from_bytes(parent),
                role,
                loads(parts),
                created,
                loads(metadata),
            )


def _loads(text: str) -> JsonValue:
    """jsonb's text as json.loads reads it: orjson (a third of the time), json when orjson
    reads a number otherwise (an integer past 64 bits, which it reads as a float; jsonb writes
    every number in full, so an integer has no point) or refuses one."""
    if text == "{}":
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # type: ignore[no-any-return]
    return json.loads(text) if _may_differ(value) else value  # type: ignore[no-any-return]


def _may_differ(value: object) -> bool:
    """Whether value, as orjson read it, holds a float that may have been an integer: past
    64 bits (every float there is whole), or infinite."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            extend(item.values())  # type: ignore[attr-defined]
        elif kind is list:
            extend(item)  # type: ignore[arg-type]
        elif kind is float and not -_INT64 < item < _INT64:  # type: ignore[operator]
            return True
    return False


_INT64 = float(1 << 63)


def _joined(batches: Iterator[list[T]], size: int) -> Iterator[list[T]]:
    """batches gathered into lists of at least size items (the last may hold fewer)."""
    pending: list[T] = []
    for batch in batches:
        pending.extend(batch)
        if len(pending) >= size:
            yield pending
            pending = []
    if pending:
        yield pending


def _json_lines(thread: Thread, leaf: str | None) -> Iterator[str | bytes]:
    """The main thread, then each child thread, one JSON document a line, each written as
    its path is read.

    The children need the tree's structure only: its leaves (ids and times) and each one's
    path (16 bytes a message, `path_order`; kept from where it leaves the main thread's),
    read once the main thread's header is written;
    the main thread's writing keeps what a child needs at the messages children fork from
    (`Forks`: a clock, counts and an id each; the tool calls of the main path). Each child's
    path after its fork is read once for what its document says before its actions
    (`threadprotocol_branch_marks`: the leaf's first action, the agents only its actions
    name), then once more as it is written, its messages a batch at a time, after the
    actions it shares with the main thread: those are the main thread's first actions, whose
    text its writing kept (`_Spool`, on disk past SPOOL_MEMORY). Memory holds the main
    path's ids, each child's ids after its fork, the main path's tool call ids, the
    children's marks and one batch."""
    start = _start(thread, leaf)
    own, derived, may_name = _header(thread)
    forks = Forks()
    # Each child: its leaf's created_at, its leaf, how many messages it shares with the main
    # thread, and the ids of its messages after those.
    children: list[tuple[str, str, int, bytes]] = []
    main = b""

    def structure() -> Iterator[JsonObject]:
        nonlocal main
        main = _order(thread, start)
        for key, created in leaf_rows(thread):
            if key != main[-16:]:
                child = ulid_from_bytes(key)
                order = path_order(thread, child)
                shared = _shared(order, main)
                children.append((created, child, shared, order[16 * shared :]))
        forks.at = {shared for _, _, shared, _ in children}
        yield from _path(main)

    def paths() -> Iterator[JsonObject]:
        return _lazy_path(thread, start)

    spool = _Spool()
    try:
        yield from _main(own, derived, may_name, paths, forks, structure(), spool)
        yield "\n"
        marked: list[tuple[str, BranchMarks, int, bytes]] = []
        for created, _, shared, tail in children:
            marks = threadprotocol_branch_marks(
                own, derived=derived, tail=_path(tail), shared=shared, forks=forks
            )
            marked.append((created, marks, shared, tail))
        children.clear()
        marked.sort(key=lambda item: threadprotocol_leaf_age(item[0], item[1].anchor))
        for _, marks, shared, tail in marked:
            shell, actions = threadprotocol_branch_tail_stream(
                own, derived=derived, marks=marks, tail=_path(tail), shared=shared, forks=forks
            )
            written = spool.prefix(shared) if shared else ()
            yield from _around(shell, "actions", _joined(actions, ACTION_BATCH), written=written)
            yield "\n"
    finally:
        spool.close()


def _shared(order: bytes, main: bytes) -> int:
    """How many messages two paths (`path_order`) begin with in common (in a tree, once two
    paths part they never meet again: a binary search)."""
    low, high = 0, min(len(order), len(main)) // 16
    while low < high:
        middle = (low + high + 1) // 2
        if order[: 16 * middle] == main[: 16 * middle]:
            low = middle
        else:
            high = middle - 1
    return low
