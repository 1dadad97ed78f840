"""ThreadProtocol content as canonical parts and back, losing nothing.

Reading moves each content-bearing value (a text, a URL, inline base64 data, tool arguments
and results) into a canonical part and keeps the rest of the action in a record (see
`threadprotocol_read`): a content item becomes a skeleton (the item without that value) and
the name of the key the value came from. Writing (`recorded_actions`) puts the values back
from the parts. A record that no longer fits its message's parts (a redacted message keeps
none) raises `StaleRecord`, and the exporter derives the actions from the parts instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import overload

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    list_of,
    object_of,
    objects_in,
)

from .document import data_url, file_part, parse_data_url, parts_of

RECORD = "threadprotocol"  # the metadata.extra namespace of records
URL_KEYS = ("url", "image_url")
DATA_KEYS = ("data", "image_base64")
MEDIA_KINDS = ("image", "audio", "video")


@overload
def json_copy(value: JsonObject) -> JsonObject: ...
@overload
def json_copy(value: list[JsonObject]) -> list[JsonObject]: ...
@overload
def json_copy(value: JsonValue) -> JsonValue: ...
def json_copy(value: JsonValue) -> JsonValue:
    """A deep copy of a JSON value (several times faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    return value


class StaleRecord(Exception):
    """A message's record does not describe its parts any more."""


def media_type_of(item: JsonObject) -> str:
    """The mime type of a content item or attachment: its media_type, else one from its kind."""
    mime = item.get("media_type")
    if isinstance(mime, str) and mime:
        return mime
    kind = item.get("type")
    return f"{kind}/*" if kind in MEDIA_KINDS else "application/octet-stream"


def read_item(item: JsonObject) -> tuple[JsonObject | None, JsonObject, str | None]:
    """(part, skeleton, source key) of a content item or attachment; no part when it has no
    text, URL or data."""
    skeleton = json_copy(item)
    if item.get("type") == "text" and isinstance(item.get("text"), str):
        del skeleton["text"]
        return {"type": "text", "text": item["text"]}, skeleton, "text"
    name = item.get("name")
    for key in URL_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value:
            del skeleton[key]
            return file_part(media_type_of(item), value, name), skeleton, key
    for key in DATA_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value:
            del skeleton[key]
            mime = media_type_of(item)
            return file_part(mime, data_url(mime, value), name), skeleton, key
    return None, skeleton, None


def read_items(items: JsonArray) -> tuple[list[JsonObject], JsonObject]:
    """The parts of a content array (or attachments) and the skeleton that writes it back."""
    parts: list[JsonObject] = []
    skeletons: list[JsonObject] = []
    sources: list[str | None] = []
    # The rules checked every item is an object.
    for item in objects_in(items):
        part, skeleton, source = read_item(item)
        if part is not None:
            parts.append(part)
        skeletons.append(skeleton)
        sources.append(source)
    return parts, {"items": skeletons, "sources": sources}


def read_content(content: JsonValue) -> tuple[list[JsonObject], JsonObject | None]:
    """The parts of a message's content; a string is one text part and needs no skeleton."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}], None
    return read_items(list_of(content))


def take(parts: Iterator[JsonObject], part_type: str) -> JsonObject:
    """The next part, which must be of part_type."""
    part = next(parts, None)
    if part is None or part.get("type") != part_type:
        raise StaleRecord(part_type)
    return part


def write_items(skeleton: JsonValue, parts: Iterator[JsonObject]) -> JsonArray:
    """A content array (or attachments) from its skeleton, taking its values from parts."""
    if not isinstance(skeleton, dict):
        raise StaleRecord("skeleton")
    out: JsonArray = []
    for item, source in zip(skeleton.get("items", []), skeleton.get("sources", []), strict=True):
        copied = json_copy(item)
        if isinstance(copied, dict):
            _fill(copied, source, parts)
        elif source == "text" or source in URL_KEYS or source in DATA_KEYS:
            raise StaleRecord("skeleton")
        out.append(copied)
    return out


def _fill(item: JsonObject, source: JsonValue, parts: Iterator[JsonObject]) -> None:
    """Put into item the value its source key names, taken from the next part."""
    if source == "text":
        item["text"] = take(parts, "text")["text"]
    elif isinstance(source, str) and source in URL_KEYS:
        item[source] = take(parts, "file")["url"]
    elif isinstance(source, str) and source in DATA_KEYS:
        url = take(parts, "file")["url"]
        inline = parse_data_url(url) if isinstance(url, str) else None
        if inline is None:
            raise StaleRecord("data")
        item[source] = inline[1]


def write_content(skeleton: JsonValue, parts: Iterator[JsonObject]) -> JsonValue:
    """A message's content: the text of one part, or an array from its skeleton."""
    if skeleton is None:
        return take(parts, "text")["text"]
    return write_items(skeleton, parts)


def has_record(message: JsonObject) -> bool:
    """Whether message holds the record of the actions it was imported from."""
    extra = object_of(message["metadata"]).get("extra")
    record = extra.get(RECORD) if isinstance(extra, dict) else None
    return isinstance(record, dict) and bool(record.get("actions"))


def recorded_actions(message: JsonObject) -> list[JsonObject] | None:
    """The actions an imported message came from, or None when its record does not fit."""
    metadata = object_of(message["metadata"])
    extra = metadata.get("extra")
    record = extra.get(RECORD) if isinstance(extra, dict) else None
    records = record.get("actions") if isinstance(record, dict) else None
    if not isinstance(records, list) or not records:
        return None
    parts = iter(parts_of(message))
    annotations = metadata.get("annotations")
    notes = iter(annotations if isinstance(annotations, list) else [])
    try:
        actions = [_write_action(item, parts, notes) for item in records]
    except (StaleRecord, KeyError, TypeError, ValueError):
        return None
    if next(parts, None) is not None or next(notes, None) is not None:
        return None
    return actions


def _write_action(
    record: JsonValue, parts: Iterator[JsonObject], notes: Iterator[JsonValue]
) -> JsonObject:
    """One recorded action, its content taken back from parts (or notes, for system.*)."""
    fields = record.get("fields") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(fields, dict):
        raise StaleRecord("record")
    action_type = record["type"]
    moved = list_of(record.get("moved", []))
    action: JsonObject = {"action_type": action_type, **json_copy(fields)}
    if action_type in ("user_message", "assistant_message"):
        action["content"] = write_content(record.get("content"), parts)
        if "attachments" in moved:
            action["attachments"] = write_items(record.get("attachments"), parts)
    elif action_type == "thinking":
        part = take(parts, "reasoning")
        if "content" in moved:
            action["content"] = part["text"]
        elif part["text"]:
            raise StaleRecord("thinking")
        if "signature" in moved:
            action["signature"] = part["signature"]
    elif action_type == "tool_call":
        part = take(parts, "tool-call")
        action.update(
            tool_call_id=part["toolCallId"],
            tool_name=part["toolName"],
            args=json_copy(part["input"]),
        )
    elif action_type == "tool_return":
        part = take(parts, "tool-result")
        action.update(
            tool_call_id=part["toolCallId"],
            tool_name=part["toolName"],
            content=json_copy(part["output"]),
        )
    elif record.get("note"):
        note = next(notes, None)
        if not isinstance(note, dict) or note.get("action_type") != action_type:
            raise StaleRecord("annotation")
        action["data"] = json_copy(note["data"])
    else:
        content = write_content(record.get("content"), parts)
        prompt = record.get("prompt")
        if prompt is not None and not isinstance(prompt, dict):
            raise StaleRecord("prompt")
        action["data"] = content if prompt is None else {**json_copy(prompt), "content": content}
    return action
