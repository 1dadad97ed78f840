"""The in-memory thread every format converts to and from, and helpers on canonical messages."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    object_of,
    objects_in,
    text_of,
)
from transcripts.message_schema import SCHEMA_VERSION, message_object


@dataclass
class TreeThread:
    """A thread as a list of canonical messages (parents before children) plus thread fields."""

    title: str
    messages: list[JsonObject]
    active_leaf: str | None
    metadata: JsonObject = field(default_factory=dict)
    agents: JsonObject = field(default_factory=dict)
    id: str | None = None
    parent_thread_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    runs: list[JsonObject] = field(default_factory=list)
    # Judgement (canonical only): scores on the thread, its runs and messages, and feedback.
    scores: list[JsonObject] = field(default_factory=list)
    feedback: list[JsonObject] = field(default_factory=list)


def make_message(
    key: str,
    parent: str | None,
    role: str,
    parts: Sequence[Mapping[str, JsonValue]],
    created_at: str | None = None,
    metadata: JsonObject | None = None,
) -> JsonObject:
    """A canonical message dict with schemaVersion set (metadata may override it)."""
    meta: JsonObject = {"schemaVersion": SCHEMA_VERSION}
    if metadata:
        meta.update(metadata)
    return message_object(key, parent, role, parts, created_at, meta)


def tool_call_part(call_id: str, name: str, tool_input: JsonValue) -> JsonObject:
    """A canonical tool-call part."""
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": tool_input}


def tool_result_part(
    call_id: str, name: str, output: JsonValue, *, is_error: bool = False
) -> JsonObject:
    """A canonical tool-result part."""
    return {
        "type": "tool-result",
        "toolCallId": call_id,
        "toolName": name,
        "output": output,
        "isError": is_error,
    }


def answer_part(
    call: JsonObject | None, call_id: str, name: str, output: JsonValue, *, is_error: bool
) -> JsonObject:
    """A tool-result part answering call (its id and tool name), or call_id and name without."""
    if call is not None:
        call_id, name = text_of(call["toolCallId"]), text_of(call["toolName"])
    return tool_result_part(call_id, name, output, is_error=is_error)


def file_part(mime_type: str, url: str, name: object = None) -> JsonObject:
    """A canonical file part, named when name is a string."""
    part: JsonObject = {"type": "file", "mimeType": mime_type, "url": url}
    if isinstance(name, str):
        part["name"] = name
    return part


def linear_thread(
    messages: list[JsonObject],
    title: str | None = None,
    metadata: JsonObject | None = None,
) -> TreeThread:
    """A chain thread: each message's parent is the previous one, the last one is the leaf."""
    previous: str | None = None
    for message in messages:
        message["parentMessageId"] = previous
        previous = as_str(message["id"])
    return TreeThread(
        title=title if title is not None else derive_title(messages),
        messages=messages,
        active_leaf=previous,
        metadata=metadata or {},
    )


def parts_of(message: JsonObject) -> list[JsonObject]:
    """The parts of a canonical message (a copy of the list; the parts are its own)."""
    return objects_in(message["parts"])


def derive_title(messages: list[JsonObject]) -> str:
    """The first line of the first user text, cut to 80 characters, for formats without one."""
    for message in messages:
        if message["role"] != "user":
            continue
        for part in objects_in(message["parts"]):
            text = text_of(part.get("text")).strip()
            if part.get("type") == "text" and text:
                line = text.splitlines()[0]
                return line if len(line) <= 80 else line[:79] + "…"
    return ""


def active_path(thread: TreeThread) -> list[JsonObject]:
    """Messages from the root down to the active leaf (the last message when none is set);
    the thread's own message dicts, typed as TreeThread types them."""
    if not thread.messages:
        return []
    by_id = {as_str(message["id"]): message for message in thread.messages}
    leaf = thread.active_leaf if thread.active_leaf in by_id else as_str(thread.messages[-1]["id"])
    path: list[JsonObject] = []
    seen: set[str] = set()
    current: str | None = leaf
    # The seen set guards against a cycle in hand-made input.
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        path.append(by_id[current])
        current = as_str(by_id[current].get("parentMessageId"))
    path.reverse()
    return path


def leaves(thread: TreeThread) -> list[str]:
    """Ids of messages without children, in list order."""
    parents = {message.get("parentMessageId") for message in thread.messages}
    return [
        key
        for message in thread.messages
        if isinstance(key := message["id"], str) and key not in parents
    ]


def path_to(thread: TreeThread, leaf: str) -> list[JsonObject]:
    """Messages from the root down to leaf."""
    return active_path(
        TreeThread(title=thread.title, messages=thread.messages, active_leaf=leaf),
    )


def extra_of(message: JsonObject, provider: str) -> JsonObject:
    """The message's metadata.extra.<provider> dict, or an empty dict."""
    return metadata_extra(object_of(message.get("metadata")), provider)


def metadata_extra(metadata: JsonObject, provider: str) -> JsonObject:
    """metadata.extra.<provider> (a message's or a thread's) dict, or an empty dict."""
    return object_of(object_of(metadata.get("extra")).get(provider))


def set_extra(metadata: JsonObject, provider: str, values: JsonObject) -> None:
    """Merge values into metadata.extra.<provider>, skipping empty input."""
    if not values:
        return
    extra = metadata.setdefault("extra", {})
    assert isinstance(extra, dict)
    kept = extra.setdefault(provider, {})
    assert isinstance(kept, dict)
    kept.update(values)


_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]*)(?P<params>(;[^;,]*)*?);base64,(?P<data>.*)$", re.S)


def parse_data_url(url: str) -> tuple[str, str] | None:
    """(mime type, base64 data) of a base64 data URL, or None for any other URL."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    return match.group("mime") or "application/octet-stream", match.group("data")


def data_url(mime_type: str, data: str) -> str:
    """A base64 data URL."""
    return f"data:{mime_type};base64,{data}"


def parse_json_text(text: str) -> JsonValue:
    """The JSON value a string holds, or the string itself when it is not JSON."""
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return text
    return value


def dump_json_text(value: object) -> str:
    """Compact JSON text for a value (non-ASCII kept readable)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def output_text(value: object) -> str:
    """A tool output as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else dump_json_text(value)


# --- a source's own fields, kept on the part they belong to --------------------------------

# The part field holding, per format, what turns our export of the part back into the
# block the source had: {"set": {field: value}, "unset": [field], "for": fingerprint}.
SOURCE_FIELDS = "sourceFields"


def part_fingerprint(part: JsonObject) -> str:
    """A short digest of a part's content, so kept source fields follow only that content."""
    content = {key: value for key, value in part.items() if key != SOURCE_FIELDS}
    text = json.dumps(
        _as_stored(content), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _as_stored(value: object) -> object:
    """value as PostgreSQL jsonb gives it back: -0.0 is 0.0 there, and a float of 1e16 or
    more (written with an exponent) an integer, so a digest survives a trip through it."""
    if isinstance(value, float):
        if abs(value) >= 1e16 and value.is_integer():
            return int(value)
        return value + 0.0
    if isinstance(value, dict):
        return {key: _as_stored(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_stored(item) for item in value]
    return value


def keep_source_fields(part: JsonObject, fmt: str, source: JsonObject, rebuilt: JsonObject) -> None:
    """Record on part what turns rebuilt (the export of part) into source (the source's block)."""
    record = _difference(source, rebuilt)
    if record:
        record["for"] = part_fingerprint(part)
        kept = part.setdefault(SOURCE_FIELDS, {})
        assert isinstance(kept, dict)
        kept[fmt] = record


def restore_source_fields(part: JsonObject, fmt: str, rebuilt: JsonObject) -> JsonObject:
    """rebuilt with the source's own fields put back, while the part is as it was imported."""
    kept = part.get(SOURCE_FIELDS)
    record = kept.get(fmt) if isinstance(kept, dict) else None
    if not isinstance(record, dict) or record.get("for") != part_fingerprint(part):
        return rebuilt
    return _patched(rebuilt, record)


def _difference(source: JsonObject, rebuilt: JsonObject) -> JsonObject:
    """What turns rebuilt into source; objects in both are compared key by key, so a changed
    detail does not copy the content beside it (an image's data next to its `detail`)."""
    changed: JsonObject = {}
    nested: JsonObject = {}
    for key, value in source.items():
        if key in rebuilt and rebuilt[key] == value:
            continue
        inner = rebuilt.get(key)
        if isinstance(value, dict) and isinstance(inner, dict):
            nested[key] = _difference(value, inner)
        else:
            changed[key] = copy.deepcopy(value)
    missing = [key for key in rebuilt if key not in source]
    record: JsonObject = {}
    if changed:
        record["set"] = changed
    if missing:
        record["unset"] = missing
    if nested:
        record["within"] = nested
    return record


def _patched(rebuilt: JsonObject, record: JsonObject) -> JsonObject:
    unset = record.get("unset")
    out = {
        key: value
        for key, value in rebuilt.items()
        if not (isinstance(unset, list) and key in unset)
    }
    within = record.get("within")
    if isinstance(within, dict):
        for key, inner in within.items():
            current = out.get(key)
            if isinstance(current, dict) and isinstance(inner, dict):
                out[key] = _patched(current, inner)
    changed = record.get("set")
    if isinstance(changed, dict):
        out.update(copy.deepcopy(changed))
    return out
