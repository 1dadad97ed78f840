"""Vercel AI SDK UI message stream → events of our vocabulary (pure: no database, no clock).

The SDK streams one assistant UI message as chunks (`text-delta`, `tool-input-available`, …).
Text and reasoning deltas are gathered by their `id` into one event per part, in the order
the parts started; tool input is correlated by `toolCallId`; every chunk that has no
canonical counterpart (sources, approvals, custom parts, message metadata, …) is kept as a
`system.ai-sdk.<type>` event, and `data-*` chunks stay `data-*` events. Nothing is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from transcripts.errors import InvalidEvents, InvalidStream
from transcripts.events import EventEnvelope, check_event
from transcripts.jsonvalue import JsonObject, JsonValue

SYSTEM_PREFIX = "system.ai-sdk."
DONE = "[DONE]"
# Fields of a chunk that must be strings (True: non-empty), by chunk type.
_REQUIRED: dict[str, dict[str, bool]] = {
    "text-delta": {"delta": False},
    "reasoning-delta": {"delta": False},
    "tool-input-start": {"toolCallId": True, "toolName": True},
    "tool-input-delta": {"toolCallId": True, "inputTextDelta": False},
    "tool-input-available": {"toolCallId": True, "toolName": True},
    "tool-input-error": {"toolCallId": True, "errorText": False},
    "tool-output-available": {"toolCallId": True},
    "tool-output-error": {"toolCallId": True, "errorText": False},
    "tool-output-denied": {"toolCallId": True},
    "file": {"url": True, "mediaType": True},
    "error": {"errorText": False},
}
_TOOL_EXTRAS = ("providerExecuted", "providerMetadata", "toolMetadata", "dynamic", "title")
_TOOL_INPUTS = ("tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error")
_TOOL_OUTPUTS = ("tool-output-available", "tool-output-error", "tool-output-denied")


def parse_stream(body: bytes, content_type: str = "") -> list[Any]:
    """The chunks of a text/event-stream body (`data: {...}` frames) or of a JSON array.

    Each chunk is a JsonValue; the list is typed Any while readers take it as chunk dicts.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidStream([("body", "the body is not UTF-8 text")]) from None
    media_type = content_type.split(";")[0].strip().lower()
    stripped = text.lstrip("\ufeff \t\r\n")
    looks_like_json = stripped.startswith(("[", "{"))
    # A JSON content type on an event-stream body (a common slip) is read by its content.
    if (media_type == "application/json" and not stripped.startswith("data:")) or (
        media_type != "text/event-stream" and looks_like_json
    ):
        chunks = _loads(stripped, "body")
        if not isinstance(chunks, list):
            raise InvalidStream([("body", "a JSON body must be an array of chunks")])
        return chunks
    chunks = _parse_event_stream(text)
    if not chunks and stripped and "data:" not in stripped:
        raise InvalidStream([("body", "no `data:` frames: not a text/event-stream body")])
    return chunks


def _loads(text: str, path: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(text)
        return value
    except (ValueError, RecursionError) as exc:
        raise InvalidStream([(path, f"not valid JSON: {exc}")]) from None


def _parse_event_stream(text: str) -> list[JsonValue]:
    """Server-Sent Events framing: data lines joined per frame; comments and ids ignored."""
    chunks: list[JsonValue] = []
    data_lines: list[str] = []
    frame = 0

    def dispatch() -> None:
        nonlocal frame
        if data_lines:
            payload = "\n".join(data_lines)
            data_lines.clear()
            if payload.strip() != DONE:
                chunks.append(_loads(payload, f"frames[{frame}]"))
            frame += 1

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            dispatch()
        elif line.startswith("data:"):
            value = line[5:]
            data_lines.append(value[1:] if value.startswith(" ") else value)
        # `event:`, `id:`, `retry:` and `:` comment lines carry nothing the chunks need.
    dispatch()
    return chunks


@dataclass
class _Slot:
    """Events that hold a position in the output; open slots still receive deltas."""

    index: int
    kind: str
    data: JsonObject
    done: bool = True
    texts: list[str] = field(default_factory=list)


@dataclass
class _Mapper:
    slots: list[_Slot] = field(default_factory=list)
    events: list[tuple[int, str, JsonObject]] = field(default_factory=list)
    open_parts: dict[tuple[str, str], _Slot] = field(default_factory=dict)
    open_tools: dict[str, _Slot] = field(default_factory=dict)
    tool_names: dict[str, str] = field(default_factory=dict)
    # Calls whose input this stream carries; an output for another call answers an earlier
    # stream (after a tool approval, say) and belongs before this stream's message.
    own_calls: set[str] = field(default_factory=set)
    pending_start: tuple[int, JsonObject] | None = None

    def flush_start(self) -> None:
        if self.pending_start is not None:
            index, data = self.pending_start
            self.pending_start = None
            self.add(index, "message-start", data)

    def add(self, index: int, kind: str, data: JsonObject, *, done: bool = True) -> _Slot:
        slot = _Slot(index, kind, data, done)
        self.slots.append(slot)
        self._flush()
        return slot

    def _flush(self) -> None:
        while self.slots and self.slots[0].done:
            slot = self.slots.pop(0)
            if slot.kind:
                self.events.append((slot.index, slot.kind, slot.data))

    def finish_all(self) -> None:
        self.flush_start()
        for (part, _), slot in list(self.open_parts.items()):
            self._close_part(part, slot)
        for slot in list(self.open_tools.values()):
            # The stream ended while the model was still writing the tool input.
            slot.kind = SYSTEM_PREFIX + "tool-input-start"
            slot.data["inputText"] = "".join(slot.texts)
            slot.done = True
        self.open_parts.clear()
        self.open_tools.clear()
        for slot in self.slots:
            slot.done = True
        self._flush()

    # --- text and reasoning ----------------------------------------------------------------

    def part_start(self, index: int, part: str, chunk: Mapping[str, JsonValue]) -> None:
        key = (part, _part_id(chunk))
        if key in self.open_parts:
            self._close_part(part, self.open_parts.pop(key))
        slot = self.add(index, part, {"id": key[1]}, done=False)
        _copy_extras(chunk, slot.data, ("providerMetadata",))
        self.open_parts[key] = slot

    def part_delta(self, index: int, part: str, chunk: Mapping[str, JsonValue]) -> None:
        key = (part, _part_id(chunk))
        slot = self.open_parts.get(key)
        if slot is None:
            self.part_start(index, part, chunk)
            slot = self.open_parts[key]
        slot.texts.append(_string(chunk, "delta"))
        _copy_extras(chunk, slot.data, ("providerMetadata",))

    def part_end(self, index: int, part: str, chunk: Mapping[str, JsonValue]) -> None:
        key = (part, _part_id(chunk))
        slot = self.open_parts.pop(key, None)
        if slot is None:
            slot = self.add(index, part, {"id": key[1]}, done=False)
        _copy_extras(chunk, slot.data, ("providerMetadata", "citations"))
        self._close_part(part, slot)

    def _close_part(self, part: str, slot: _Slot) -> None:
        text = "".join(slot.texts)
        if part == "text":
            slot.kind = "text-delta"
            slot.data = {"delta": text, **slot.data}
        else:
            slot.kind = "reasoning"
            slot.data = {"text": text, **slot.data}
            signature = _signature(slot.data.get("providerMetadata"))
            if signature is not None:
                slot.data["signature"] = signature
        if not text and len(slot.data) <= 2:
            slot.kind = ""  # an empty part with nothing but its id carries nothing
        slot.done = True
        self._flush()

    # --- tools -----------------------------------------------------------------------------

    def tool_start(self, index: int, chunk: Mapping[str, JsonValue]) -> None:
        call_id, name = _string(chunk, "toolCallId"), _string(chunk, "toolName")
        self.own_calls.add(call_id)
        self.tool_names[call_id] = name
        data: JsonObject = {"toolCallId": call_id, "toolName": name}
        _copy_extras(chunk, data, (*_TOOL_EXTRAS, "inputEncoding"))
        self.open_tools[call_id] = self.add(index, "tool-call", data, done=False)

    def tool_delta(self, index: int, chunk: Mapping[str, JsonValue]) -> None:
        slot = self.open_tools.get(_string(chunk, "toolCallId"))
        if slot is None:
            self.add(index, SYSTEM_PREFIX + "tool-input-delta", _without_type(chunk))
            return
        slot.texts.append(_string(chunk, "inputTextDelta"))

    def tool_input(self, index: int, chunk: Mapping[str, JsonValue], *, error: bool) -> None:
        call_id = _string(chunk, "toolCallId")
        self.own_calls.add(call_id)
        name = chunk.get("toolName") or self.tool_names.get(call_id, "")
        slot = self.open_tools.pop(call_id, None)
        if slot is None:
            slot = self.add(index, "tool-call", {"toolCallId": call_id}, done=False)
        if not isinstance(name, str) or not name:
            raise InvalidStream([(f"chunks[{index}].toolName", "toolName must be a string")])
        self.tool_names[call_id] = name
        slot.data.update({"toolName": name, "input": chunk.get("input")})
        _copy_extras(chunk, slot.data, _TOOL_EXTRAS)
        if error:
            slot.data["errorText"] = chunk["errorText"]
        slot.done = True
        self._flush()

    def tool_output(self, index: int, chunk: Mapping[str, JsonValue]) -> None:
        call_id = chunk["toolCallId"]
        if chunk.get("preliminary"):
            # A streaming tool's interim output; the final one follows as a tool result.
            self.add(index, SYSTEM_PREFIX + "tool-output-available", _without_type(chunk))
            return
        kind = chunk["type"]
        data: JsonObject = {"toolCallId": call_id}
        if call_id in self.tool_names:
            data["toolName"] = self.tool_names[call_id]
        if kind == "tool-output-available":
            data.update(output=chunk.get("output"), isError=False)
        elif kind == "tool-output-error":
            data.update(output=chunk["errorText"], isError=True, errorText=chunk["errorText"])
        else:
            data.update(output="The tool call was denied.", isError=True, denied=True)
        _copy_extras(chunk, data, _TOOL_EXTRAS)
        self.add(index, "tool-result", data)


def _string(chunk: Mapping[str, JsonValue], name: str) -> str:
    """A field `_check_chunk` made sure is a string."""
    return str(chunk[name])


def _part_id(chunk: Mapping[str, JsonValue]) -> str:
    value = chunk.get("id")
    return value if isinstance(value, str) else ""


def _copy_extras(chunk: Mapping[str, JsonValue], data: JsonObject, keys: Iterable[str]) -> None:
    for key in keys:
        if key in chunk:
            data[key] = chunk[key]


def _without_type(chunk: Mapping[str, JsonValue]) -> JsonObject:
    return {key: value for key, value in chunk.items() if key != "type"}


def _signature(provider_metadata: object) -> str | None:
    """The reasoning signature some providers (Anthropic, Bedrock) send in providerMetadata."""
    if not isinstance(provider_metadata, Mapping):
        return None
    for provider in provider_metadata.values():
        if isinstance(provider, Mapping) and isinstance(provider.get("signature"), str):
            return str(provider["signature"])
    return None


def _check_chunk(chunk: object, index: int) -> tuple[JsonObject, str]:
    where = f"chunks[{index}]"
    if not isinstance(chunk, dict):
        raise InvalidStream([(where, "a chunk must be a JSON object")])
    kind = chunk.get("type")
    if not isinstance(kind, str) or not kind:
        raise InvalidStream([(f"{where}.type", "type must be a non-empty string")])
    for name, non_empty in _REQUIRED.get(kind, {}).items():
        value = chunk.get(name)
        if not isinstance(value, str) or (non_empty and not value):
            wanted = "a non-empty string" if non_empty else "a string"
            raise InvalidStream([(f"{where}.{name}", f"{name} must be {wanted}")])
    return chunk, kind


def _steering_message(chunk: Mapping[str, JsonValue]) -> JsonObject | None:
    """A user message added mid-run (v7 steering) as a complete message event."""
    parts: list[JsonValue] = []
    raw_parts = chunk.get("parts")
    if not isinstance(raw_parts, list):
        return None
    for part in raw_parts:
        if not isinstance(part, dict):
            return None
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "file":
            file: JsonObject = {
                "type": "file",
                "mimeType": part.get("mediaType"),
                "url": part.get("url"),
            }
            if isinstance(part.get("filename"), str):
                file["name"] = part["filename"]
            parts.append(file)
        else:
            return None
    message: JsonObject = {"role": "user", "parts": parts}
    if isinstance(chunk.get("id"), str):
        message["id"] = chunk["id"]
    return message


def _map_chunk(mapper: _Mapper, index: int, chunk: JsonObject, kind: str) -> None:
    if kind != "start" and not (
        kind in _TOOL_OUTPUTS and chunk["toolCallId"] not in mapper.own_calls
    ):
        mapper.flush_start()
    if kind in ("text-start", "reasoning-start"):
        mapper.part_start(index, kind.split("-")[0], chunk)
    elif kind in ("text-delta", "reasoning-delta"):
        mapper.part_delta(index, kind.split("-")[0], chunk)
    elif kind in ("text-end", "reasoning-end"):
        mapper.part_end(index, kind.split("-")[0], chunk)
    elif kind == "tool-input-start":
        mapper.tool_start(index, chunk)
    elif kind == "tool-input-delta":
        mapper.tool_delta(index, chunk)
    elif kind in ("tool-input-available", "tool-input-error"):
        mapper.tool_input(index, chunk, error=kind == "tool-input-error")
    elif kind in _TOOL_OUTPUTS:
        mapper.tool_output(index, chunk)
    elif kind == "start":
        data: JsonObject = {"role": "assistant"}
        if isinstance(chunk.get("messageId"), str):
            data["messageId"] = chunk["messageId"]
        if "messageMetadata" in chunk:
            metadata = chunk["messageMetadata"]
            data["metadata"] = metadata if isinstance(metadata, dict) else {"value": metadata}
        mapper.flush_start()
        mapper.pending_start = (index, data)
    elif kind == "start-step":
        mapper.add(index, "step-started", {})
    elif kind == "finish-step":
        mapper.add(index, "step-finished", {})
    elif kind == "finish":
        _map_finish(mapper, index, chunk)
    elif kind == "file":
        data = {"mimeType": chunk["mediaType"], "url": chunk["url"]}
        _copy_extras(chunk, data, ("providerMetadata",))
        mapper.add(index, "file", data)
    elif kind == "error":
        mapper.add(index, "error", {"message": chunk["errorText"]})
    elif kind == "abort":
        reason = chunk.get("reason")
        message = f"the stream was aborted: {reason}" if reason else "the stream was aborted"
        mapper.add(index, "error", {**_without_type(chunk), "message": message, "code": "abort"})
    elif kind.startswith("data-") and len(kind) > len("data-"):
        mapper.add(index, kind, _without_type(chunk))
    elif kind == "steering-message" and (steering := _steering_message(chunk)) is not None:
        mapper.add(index, "message", steering)
    else:
        mapper.add(index, SYSTEM_PREFIX + kind, _without_type(chunk))


def _map_finish(mapper: _Mapper, index: int, chunk: Mapping[str, JsonValue]) -> None:
    """Finish reason (and usage found in the message metadata) go on the last step."""
    data: JsonObject = {}
    if isinstance(chunk.get("finishReason"), str):
        data["finishReason"] = chunk["finishReason"]
    if "messageMetadata" in chunk:
        metadata = chunk["messageMetadata"]
        data["messageMetadata"] = metadata
        if isinstance(metadata, dict):
            usage = metadata.get("totalUsage", metadata.get("usage"))
            if isinstance(usage, dict):
                data["usage"] = usage
    if mapper.slots:
        last_kind, last_data = mapper.slots[-1].kind, mapper.slots[-1].data
    elif mapper.events:
        _, last_kind, last_data = mapper.events[-1]
    else:
        last_kind, last_data = "", {}
    if last_kind == "step-finished":
        last_data.update(data)
    else:
        mapper.add(index, "step-finished", data)
    mapper.add(index, "message-end", {})


def answered_elsewhere(chunks: Iterable[object]) -> list[str]:
    """toolCallIds whose output the chunks carry without the call's input (an earlier stream,
    e.g. before a tool approval, had it): the caller may look their tool names up."""
    own: set[str] = set()
    found: list[str] = []
    for chunk in chunks:
        if not isinstance(chunk, dict) or not isinstance(chunk.get("toolCallId"), str):
            continue
        call_id = chunk["toolCallId"]
        if chunk.get("type") in _TOOL_INPUTS:
            own.add(call_id)
        elif chunk.get("type") in _TOOL_OUTPUTS and call_id not in own and call_id not in found:
            found.append(call_id)
    return found


def chunks_to_events(
    chunks: Iterable[object], tool_names: Mapping[str, str] | None = None
) -> list[tuple[int, str, JsonObject]]:
    """(index of the source chunk, kind, data) for every event the chunks amount to.

    tool_names maps the toolCallIds of calls made before this stream to their tool names.
    """
    mapper = _Mapper(tool_names=dict(tool_names or {}))
    for index, chunk in enumerate(chunks):
        checked, kind = _check_chunk(chunk, index)
        _map_chunk(mapper, index, checked, kind)
    mapper.finish_all()
    for index, kind, data in mapper.events:
        try:
            check_event({"seq": 1, "kind": kind, "data": data}, 0)
        except InvalidEvents as exc:
            problem = exc.problems[0]
            path = problem.path.removeprefix("events[0]").removeprefix(".data")
            raise InvalidStream([(f"chunks[{index}]{path}", problem.message)]) from None
    return mapper.events


def to_events(
    chunks: Iterable[object], *, after_seq: int, tool_names: Mapping[str, str] | None = None
) -> list[EventEnvelope]:
    """Events ready for the ledger, numbered from after_seq + 1."""
    return [
        {"seq": after_seq + offset, "kind": kind, "data": data}
        for offset, (_, kind, data) in enumerate(chunks_to_events(chunks, tool_names), start=1)
    ]
