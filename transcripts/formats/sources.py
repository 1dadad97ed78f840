"""What the chat-app exports (ChatGPT, Claude.ai, Open WebUI, LibreChat) share: the log of
what a reader could not keep, their times, turning a parent-linked list into a tree, and
reading a large file one conversation at a time."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, BinaryIO, cast

import ijson

from transcripts.errors import BodyTooLarge, FormatError, InvalidInput
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    list_of,
    text_of,
)
from transcripts.times import epoch_to_iso, parse_iso, to_iso

from .document import TreeThread
from .validation import Problems


@dataclass(frozen=True)
class Skipped:
    """One thing of the source that was not imported as it was, and why."""

    where: str
    what: str
    why: str

    def as_dict(self) -> dict[str, str]:
        """The JSON form the import report carries."""
        return {"where": self.where, "what": self.what, "why": self.why}


@dataclass
class Skips:
    """Collects Skipped items while a reader converts a source (nothing dropped silently)."""

    items: list[Skipped] = field(default_factory=list)
    # Each reader counts what it turned into labelled text parts or resolved from a zip.
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, where: str, what: str, why: str) -> None:
        """Record one item that was left out or only kept as a label."""
        self.items.append(Skipped(where, what, why))

    def count(self, key: str, amount: int = 1) -> None:
        """Add to one of the source's own counters (assets resolved, labelled parts, ...)."""
        self.counts[key] = self.counts.get(key, 0) + amount


def labelled(label: str, body: str | None = None) -> JsonObject:
    """A text part standing for content that has no part type of its own: `[label]` first."""
    text = f"[{label}]" if not body else f"[{label}]\n\n{body}"
    return {"type": "text", "text": text}


def file_parts(
    files: object,
    where: str,
    skips: Skips,
    app: str,
    read: Callable[[JsonObject], JsonObject | str],
) -> list[JsonObject]:
    """The parts of a chat app's list of attached files: read gives a file's part, or the
    label of a file the export does not hold (kept as a labelled text part, and logged)."""
    parts: list[JsonObject] = []
    for index, item in enumerate(list_of(files)):
        if not isinstance(item, dict):
            continue
        found = read(item)
        if isinstance(found, dict):
            parts.append(found)
            continue
        skips.add(f"{where}[{index}]", f"file {found}", f"kept on the {app} server, not exported")
        skips.count("labelled")
        parts.append(labelled(f"file not in the export: {found}"))
    return parts


def iso_time(value: JsonValue) -> str | None:
    """ISO 8601 text for an ISO string or epoch seconds (milliseconds when that large)."""
    if isinstance(value, str):
        moment = parse_iso(value)
        try:
            return to_iso(moment) if moment is not None else None
        except OverflowError:
            return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        seconds = float(value) / 1000 if abs(value) > 1e11 else float(value)
        try:
            return epoch_to_iso(seconds)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def parents_first(
    keys: Iterable[str],
    parent_of: Callable[[str], str | None],
) -> list[str]:
    """Keys ordered so each comes after its parent, keeping the given order among siblings.

    A parent that is not among keys, or a cycle, makes a key a root (parent_of decides).
    """
    ordered_keys = list(keys)
    known = set(ordered_keys)
    children: dict[str | None, list[str]] = {}
    for key in ordered_keys:
        parent = parent_of(key)
        children.setdefault(parent if parent in known else None, []).append(key)
    order: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(children.get(None, [])))
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        order.append(key)
        stack.extend(reversed(children.get(key, [])))
    # Keys only reachable through a cycle: each becomes a root, in the given order.
    for key in ordered_keys:
        if key not in seen:
            seen.add(key)
            order.append(key)
            stack = list(reversed(children.get(key, [])))
            while stack:
                child = stack.pop()
                if child not in seen:
                    seen.add(child)
                    order.append(child)
                    stack.extend(reversed(children.get(child, [])))
    return order


def orphaned(parent: str, known: Collection[str]) -> str:
    """Why a message whose parent could not be placed before it became a root."""
    if parent in known:
        return f"parent {parent} closes a cycle: made a root"
    return f"parent {parent} is not in the export: made a root"


def new_key(
    message: JsonObject,
    field: str,
    where: str,
    known: Collection[str],
    problems: Problems,
    what: str = "id",
) -> str | None:
    """message[field] when it is a non-empty string not in known, else None and a problem
    (a duplicate is named as a `duplicate message <what>`)."""
    key = message.get(field)
    if not isinstance(key, str) or not key:
        problems.add(f"{where}.{field}", "expected a non-empty string")
        return None
    if key in known:
        problems.add(f"{where}.{field}", f"duplicate message {what} {key!r}")
        return None
    return key


# (key, JSON path, source message, parent key) -> the canonical message, or None to leave out.
Convert = Callable[[str, str, JsonObject, str | None], "JsonObject | None"]


def placed_messages(
    raw: dict[str, tuple[str, JsonObject]],
    parents: dict[str, str | None],
    skips: Skips,
    convert: Convert,
    label: str = "",
) -> list[JsonObject]:
    """The messages convert makes of raw (key -> (JSON path, source message)), each after its
    parent. A parent not placed before its child (missing, or closing a cycle) is logged (the
    path prefixed with label) and the child becomes a root; a message left out hands its
    children to its own parent."""
    messages: list[JsonObject] = []
    placed: set[str] = set()
    handed: dict[str, str | None] = {}
    for key in parents_first(raw, parents.__getitem__):
        where, message = raw[key]
        parent = parents[key]
        if parent is not None and parent not in placed:
            skips.add(f"{label}{where}", "parent link", orphaned(parent, raw))
            parent = None
        parent = handed.get(parent, parent) if parent is not None else None
        placed.add(key)
        converted = convert(key, where, message, parent)
        if converted is None:
            handed[key] = parent
        else:
            messages.append(converted)
    return messages


def newest_leaf(messages: list[JsonObject]) -> str | None:
    """The leaf created last (list order breaks ties and stands in for missing times)."""
    parents = {message.get("parentMessageId") for message in messages}
    best: tuple[str, int] | None = None
    best_id: str | None = None
    for index, message in enumerate(messages):
        key = as_str(message["id"])
        if key in parents:
            continue
        rank = (text_of(message.get("createdAt")), index)
        if best is None or rank >= best:
            best, best_id = rank, key
    return best_id


def skip_blank(fp: BinaryIO) -> bytes:
    """The first byte that is not whitespace or a UTF-8 byte order mark (b"" at the end)."""
    while True:
        byte = fp.read(1)
        if not byte or not (byte.isspace() or byte in (b"\xef", b"\xbb", b"\xbf")):
            return byte


class Prefixed:
    """A binary reader that replays bytes already consumed before the rest of the file."""

    def __init__(self, prefix: bytes, fp: BinaryIO) -> None:
        self.prefix = prefix
        self.fp = fp

    def read(self, size: int = -1) -> bytes:
        """Bytes from the replayed prefix, then from the file."""
        # ijson probes with read(0) to tell bytes from text: that must not consume the prefix.
        if self.prefix and size != 0:
            head, self.prefix = self.prefix, b""
            if size < 0:
                return head + self.fp.read()
            return head + (self.fp.read(size - len(head)) if size > len(head) else b"")
        return self.fp.read(size)


def read_whole(prefix: bytes, fp: BinaryIO) -> object:
    """The JSON document of prefix (bytes already read) and the rest of fp, parsed whole."""
    try:
        document: object = json.loads(prefix + fp.read())
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise FormatError([("$", f"invalid JSON: {error}")]) from error
    return document


def stream_items(
    fp: Prefixed,
    items_at: str,
    base: str,
    read: Callable[[object, str, Problems], TreeThread | None],
) -> Iterator[TreeThread]:
    """The threads read (by read) from each item of the array at items_at (an ijson prefix),
    parsed one item at a time; each item's problems are raised before the next is read."""
    index = 0
    try:
        for item in ijson.items(fp, items_at, use_float=True):
            problems = Problems()
            thread = read(item, f"{base}[{index}]", problems)
            problems.raise_if_any()
            if thread is not None:
                yield thread
            index += 1
    except FormatError:
        raise
    except (ijson.JSONError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise FormatError([(f"{base}[{index}]", f"invalid JSON: {error}")]) from error


ReadOne = Callable[[object, str, Problems, "Skips"], "TreeThread | None"]


def import_each(data: object, read: ReadOne, skips: Skips | None) -> list[TreeThread]:
    """The threads read (by read) from one exported conversation or an array of them; every
    problem of every conversation is reported at once."""
    log = skips if skips is not None else Skips()
    problems = Problems()
    items = [data] if isinstance(data, dict) else (problems.array(data, "$") or [])
    threads = []
    for index, item in enumerate(items):
        thread = read(item, "$" if isinstance(data, dict) else f"$[{index}]", problems, log)
        if thread is not None:
            threads.append(thread)
    problems.raise_if_any()
    return threads


@dataclass(frozen=True)
class JsonLimits:
    """How deeply a JSON file may nest and how long one of its strings may be (in bytes as
    written), checked on the bytes before anything is parsed, and how large a document read
    whole (not one item at a time) may be."""

    depth: int = 64
    string_bytes: int = 16 << 20
    document_bytes: int = 32 << 20
    # One item of the file, parsed whole: an object inside the outer container, or anything
    # inside an array inside it (a conversation of `[...]` or `{"conversations": [...]}`).
    item_bytes: int = 32 << 20


# Outside a string: the next character that opens or closes a container or a string.
_STRUCTURE = re.compile(rb'["\[\]{}]')
# Inside a string: its characters up to the closing quote (escapes skipped as pairs).
_STRING_BODY = re.compile(rb'(?:[^"\\]+|\\.)*', re.DOTALL)
# Outside a string: every complete string and every other byte up to the next bracket, or up to
# the quote opening a string that the piece does not close (group 1), in one regex call.
# Possessive, so linear: a string closes at its first unescaped quote or is not complete.
_SKIP_TO_STRUCTURE = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+([\[\]{}"])?', re.DOTALL)


class JsonScan:
    """A streaming check of JSON bytes fed in any pieces: the nesting outside strings, the
    length of each string and of each item, refused (InvalidInput / BodyTooLarge naming the
    limit) as soon as a piece goes past them. Linear time, constant memory: nothing is parsed."""

    def __init__(self, limits: JsonLimits, *, skims: bool = True) -> None:
        self.limits = limits
        # False walks every string, whatever the length of the pieces (the tests compare).
        self.skims = skims
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.string_bytes = 0
        self.lines = 0  # in the pieces already checked
        self.offset = 0  # bytes of the pieces already checked
        self.item_start: int | None = None  # where the item open now starts
        self.item_depth = 0

    def feed(self, chunk: bytes) -> None:
        """Check the next bytes of the file."""
        pos, end = 0, len(chunk)
        # No string that opens and closes in a piece this short can pass the limit, so such
        # strings are skipped inside the regex; the rest is checked byte run by byte run.
        skim = self.skims and end <= self.limits.string_bytes
        while pos < end:
            if self.in_string:
                pos = self._string(chunk, pos, end)
                continue
            if skim:
                skipped = _SKIP_TO_STRUCTURE.match(chunk, pos)  # always matches
                at = skipped.start(1) if skipped is not None else -1
                if at < 0:
                    break
            else:
                found = _STRUCTURE.search(chunk, pos)
                if found is None:
                    break
                at = found.start()
            pos = at + 1
            byte = chunk[at]
            if byte == 0x22:  # "
                self.in_string, self.string_bytes = True, 0
            elif byte in (0x5B, 0x7B):  # [ {
                self.depth += 1
                if self.depth > self.limits.depth:
                    line = self._line(chunk, pos)
                    raise InvalidInput(
                        f"the file nests JSON deeper than {self.limits.depth} levels (line {line})",
                        field="body",
                        line=line,
                        maxDepth=self.limits.depth,
                        limit="TRANSCRIPTS_MAX_JSON_DEPTH",
                    )
                if self.item_start is None and (
                    self.depth == 3 or (self.depth == 2 and byte == 0x7B)
                ):
                    self.item_start, self.item_depth = self.offset + at, self.depth
            else:
                self.depth -= 1
                if self.item_start is not None and self.depth < self.item_depth:
                    self._check_item(chunk, pos)
                    self.item_start = None
        if self.item_start is not None:
            self._check_item(chunk, end)
        self.lines += chunk.count(b"\n")
        self.offset += end

    def _check_item(self, chunk: bytes, pos: int) -> None:
        """Refuse the item open now when it has grown past its limit by pos in chunk."""
        assert self.item_start is not None
        limit = self.limits.item_bytes
        if self.offset + pos - self.item_start > limit:
            line = self._line(chunk, pos)
            raise BodyTooLarge(
                f"one item of the file (a conversation) has more than {limit} bytes (line {line})",
                line=line,
                maxBytes=limit,
                limit="TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES",
            )

    def _line(self, chunk: bytes, pos: int) -> int:
        """The line (from 1) of the file at pos in chunk."""
        return self.lines + chunk.count(b"\n", 0, pos) + 1

    def _string(self, chunk: bytes, pos: int, end: int) -> int:
        """Consume string bytes from pos; the position after them (past the closing quote)."""
        start = pos
        if self.escaped:  # the piece before ended on a backslash: this byte is escaped
            self.escaped, pos = False, pos + 1
        body = _STRING_BODY.match(chunk, pos)
        stop = body.end() if body is not None else pos
        self.string_bytes += stop - start
        if self.string_bytes > self.limits.string_bytes:
            line = self._line(chunk, stop)
            raise BodyTooLarge(
                f"the file holds a JSON string of more than {self.limits.string_bytes} bytes "
                f"(line {line})",
                line=line,
                maxBytes=self.limits.string_bytes,
                limit="TRANSCRIPTS_MAX_IMPORT_STRING_BYTES",
            )
        if stop >= end:
            return end
        if chunk[stop] == 0x5C:  # a backslash closing the piece: its pair comes next
            self.escaped, self.string_bytes = True, self.string_bytes + 1
            return stop + 1
        self.in_string = False
        return stop + 1


def check_json_bytes(data: bytes, limits: JsonLimits) -> None:
    """Refuse JSON bytes (a whole file, or several JSON values) past limits, before parsing."""
    JsonScan(limits).feed(data)


class Guarded:
    """A binary reader that checks every byte it hands out with a JsonScan, so a parser
    reading through it is stopped before it builds what is too deep or too long."""

    def __init__(self, fp: IO[bytes], limits: JsonLimits) -> None:
        self.fp = fp
        self.scan = JsonScan(limits)

    def read(self, size: int = -1) -> bytes:
        """The next bytes of the file, checked; all the rest (size < 0) only up to the size
        of a document read whole."""
        if size < 0:
            limit = self.scan.limits.document_bytes
            data = self.fp.read(limit + 1)
            if len(data) > limit:
                raise document_too_large(limit, f"more than {limit}")
        else:
            data = self.fp.read(size)
        self.scan.feed(data)
        return data


def document_too_large(limit: int, size: str) -> BodyTooLarge:
    """The refusal of a document too large to be read whole."""
    return BodyTooLarge(
        f"a document read whole may have at most {limit} bytes; this one has {size} "
        "(ChatGPT and Claude.ai exports are read one conversation at a time)",
        maxBytes=limit,
        limit="TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES",
    )


def guarded(fp: IO[bytes], limits: JsonLimits) -> BinaryIO:
    """fp read through a Guarded reader (what the readers of a file take)."""
    return cast(BinaryIO, Guarded(fp, limits))
