"""The projector: a pure function from a run's events to canonical messages.

No database, no clock, no randomness: the same events (and fork point) always give the same
messages, ids included. Every part it writes has every field of the canonical schema
(`transcripts.message_schema`), whatever a `message` event left out. A snapshot is the
projector's state as JSON; projecting the events after a snapshot gives exactly what
projecting from seq 1 gives.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from transcripts.ids import derived_ulid, is_ulid, ulid_timestamp_ms
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_object,
    as_str,
    json_copy,
    list_at,
    object_at,
)
from transcripts.message_schema import (
    SCHEMA_VERSION,
    CanonicalMessage,
    FilePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_message,
    plain_messages,
    stored_parts,
)
from transcripts.times import epoch_ms_to_iso, parse_iso

SNAPSHOT_VERSION = 1
CONTENT_ROLES = ("user", "assistant", "system")
# What a moderator's redaction leaves of a message: its events are scrubbed and marked
# "redacted", and a message with such an event projects to this marker.
REDACTION_TEXT = "[redacted by a moderator]"
REDACTED_KINDS = (
    "message-start",
    "text-delta",
    "reasoning",
    "tool-call",
    "tool-result",
    "file",
    "message",
)


class Snapshot(TypedDict):
    """The projector's state as JSON (`Projector.to_snapshot`)."""

    version: int
    runId: str
    parentId: str | None
    messages: list[CanonicalMessage]
    seqRanges: list[list[int]]
    isOpen: bool
    lastSeq: int
    lastMs: int
    toolNames: dict[str, str]
    usedIds: list[str]
    errors: list[JsonObject]
    annotations: list[JsonObject]
    metadata: JsonObject
    stepsStarted: int


@dataclass(frozen=True)
class Projection:
    """What a run's events amount to."""

    messages: list[JsonObject]
    seq_ranges: list[tuple[int, int]]
    errors: list[JsonObject]
    annotations: list[JsonObject]
    metadata: JsonObject
    last_seq: int
    open: bool


def _add_usage(total: JsonObject, usage: Mapping[str, JsonValue]) -> None:
    """Sum numeric counters; nested detail objects are summed key by key."""
    for key, value in usage.items():
        if isinstance(value, bool):
            total[key] = value
        elif isinstance(value, int | float):
            previous = total.get(key)
            total[key] = (previous if isinstance(previous, int | float) else 0) + value
        elif isinstance(value, Mapping):
            nested = total.get(key)
            if not isinstance(nested, dict):
                nested = {}
                total[key] = nested
            _add_usage(nested, value)
        elif value is not None:
            total[key] = value


@dataclass
class Projector:
    """Folds events into messages. Use project() unless you need incremental updates."""

    run_id: str
    parent_id: str | None = None
    canonical: list[CanonicalMessage] = field(default_factory=list)
    seq_ranges: list[list[int]] = field(default_factory=list)
    is_open: bool = False
    # Text of the open message's last part, kept as chunks so long streams stay linear.
    chunks: list[str] = field(default_factory=list)
    last_seq: int = 0
    last_ms: int = 0
    tool_names: dict[str, str] = field(default_factory=dict)
    used_ids: list[str] = field(default_factory=list)
    errors: list[JsonObject] = field(default_factory=list)
    annotations: list[JsonObject] = field(default_factory=list)
    metadata: JsonObject = field(default_factory=dict)
    steps_started: int = 0

    @property
    def messages(self) -> list[JsonObject]:
        """The messages so far, for readers that take plain dicts (the open one may lack text
        still buffered)."""
        return plain_messages(self.canonical)

    # --- snapshots -------------------------------------------------------------------------

    def to_snapshot(self) -> Snapshot:
        """The full state as JSON-able data."""
        self._flush()
        return {
            "version": SNAPSHOT_VERSION,
            "runId": self.run_id,
            "parentId": self.parent_id,
            "messages": copy.deepcopy(self.canonical),
            "seqRanges": [list(r) for r in self.seq_ranges],
            "isOpen": self.is_open,
            "lastSeq": self.last_seq,
            "lastMs": self.last_ms,
            "toolNames": dict(self.tool_names),
            "usedIds": list(self.used_ids),
            "errors": copy.deepcopy(self.errors),
            "annotations": copy.deepcopy(self.annotations),
            "metadata": copy.deepcopy(self.metadata),
            "stepsStarted": self.steps_started,
        }

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> Projector:
        """Rebuild a projector from to_snapshot() output."""
        if snapshot.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"unsupported snapshot version {snapshot.get('version')!r}")
        return cls(
            run_id=snapshot["runId"],
            parent_id=snapshot["parentId"],
            canonical=copy.deepcopy(snapshot["messages"]),
            seq_ranges=[list(r) for r in snapshot["seqRanges"]],
            is_open=snapshot["isOpen"],
            last_seq=snapshot["lastSeq"],
            last_ms=snapshot["lastMs"],
            tool_names=dict(snapshot["toolNames"]),
            used_ids=list(snapshot["usedIds"]),
            errors=copy.deepcopy(snapshot["errors"]),
            annotations=copy.deepcopy(snapshot["annotations"]),
            metadata=copy.deepcopy(snapshot["metadata"]),
            steps_started=snapshot["stepsStarted"],
        )

    # --- output ----------------------------------------------------------------------------

    def result(self) -> Projection:
        """The messages so far (the last one may still be open)."""
        self._flush()
        return Projection(
            messages=plain_messages(copy.deepcopy(self.canonical)),
            seq_ranges=[(r[0], r[1]) for r in self.seq_ranges],
            errors=copy.deepcopy(self.errors),
            annotations=copy.deepcopy(self.annotations),
            metadata=copy.deepcopy(self.metadata),
            last_seq=self.last_seq,
            open=self.is_open,
        )

    # --- folding ---------------------------------------------------------------------------

    def apply_all(self, events: Iterable[Mapping[str, object]]) -> Projector:
        """Apply events in order; returns self."""
        for event in events:
            self.apply(event)
        return self

    def apply(self, event: Mapping[str, object]) -> None:
        """Apply one event (a `StoredEvent`, already validated at append time)."""
        raw_seq = event["seq"]
        if not isinstance(raw_seq, int | float | str):
            raise TypeError(f"event seq {raw_seq!r} is not a number")
        seq = int(raw_seq)
        if seq <= self.last_seq:
            raise ValueError(f"event seq {seq} is not after {self.last_seq}")
        self.last_seq = seq
        kind = str(event["kind"])
        raw = event.get("data")
        data: Mapping[str, JsonValue] = raw if isinstance(raw, Mapping) else {}
        moment = parse_iso(event.get("at"))
        at_ms = None if moment is None else int(moment.timestamp() * 1000)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, seq, data, at_ms)
            if data.get("redacted") is True and kind in REDACTED_KINDS:
                self._redact_last()
        elif kind.startswith(("data-", "system.")):
            self._annotate(seq, kind, json_copy(raw))
        else:
            # The ledger rejects unknown kinds on append, so this only meets corrupt input.
            raise ValueError(f"unknown event kind {kind!r} at seq {seq}")

    # --- message boundaries ----------------------------------------------------------------

    def _open_message(
        self,
        seq: int,
        at_ms: int | None,
        role: str,
        *,
        requested_id: JsonValue = None,
        metadata: Mapping[str, JsonValue] | None = None,
        created_at: str | None = None,
    ) -> CanonicalMessage:
        self._close()
        index = len(self.canonical)
        if at_ms is None:
            at_ms = self.last_ms or ulid_timestamp_ms(self.run_id)
        self.last_ms = max(self.last_ms, at_ms)
        # ULIDs are case-insensitive; the database hands them back upper-case, so must we.
        wanted = (
            requested_id.upper()
            if isinstance(requested_id, str) and is_ulid(requested_id)
            else None
        )
        if wanted is not None and wanted not in self.used_ids:
            message_id = wanted
        else:
            message_id = derived_ulid(self.last_ms, index, self.run_id, index)
        self.used_ids.append(message_id)
        meta: JsonObject = {"schemaVersion": SCHEMA_VERSION}
        if metadata:
            meta.update(copy.deepcopy(dict(metadata)))
            meta["schemaVersion"] = SCHEMA_VERSION
        if requested_id is not None and message_id != wanted:
            meta["sourceMessageId"] = requested_id
        parent = self.canonical[-1]["id"] if self.canonical else self.parent_id
        message = canonical_message(
            message_id, parent, role, [], created_at or epoch_ms_to_iso(self.last_ms), meta
        )
        self.canonical.append(message)
        self.seq_ranges.append([seq, seq])
        self.is_open = True
        return message

    def _close(self) -> None:
        self._flush()
        self.is_open = False

    def _touch(self, seq: int) -> None:
        if self.seq_ranges:
            self.seq_ranges[-1][1] = seq

    def _content_message(self, seq: int, at_ms: int | None) -> CanonicalMessage:
        """The open message that content goes into; a tool message makes way for a new one."""
        if self.is_open and self.canonical[-1]["role"] in CONTENT_ROLES:
            self._touch(seq)
            return self.canonical[-1]
        return self._open_message(seq, at_ms, "assistant")

    def _flush(self) -> None:
        """Move buffered text into the last part."""
        if self.chunks:
            part = self.canonical[-1]["parts"][-1]
            if part["type"] == "text" or part["type"] == "reasoning":
                part["text"] = part["text"] + "".join(self.chunks)
            self.chunks = []

    def _append_text(
        self, message: CanonicalMessage, part_type: Literal["text", "reasoning"], text: str
    ) -> None:
        parts = message["parts"]
        last = parts[-1] if parts else None
        if last is not None and last["type"] == part_type and "signature" not in last:
            self.chunks.append(text)
            return
        self._flush()
        if part_type == "text":
            parts.append(TextPart(type="text", text=text))
        else:
            parts.append(ReasoningPart(type="reasoning", text=text))

    def _last_assistant(self) -> CanonicalMessage | None:
        return next((m for m in reversed(self.canonical) if m["role"] == "assistant"), None)

    def _annotate(self, seq: int, kind: str, data: JsonValue) -> None:
        note: JsonObject = {"seq": seq, "kind": kind, "data": data}
        if self.is_open:
            self._touch(seq)
            list_at(self.canonical[-1]["metadata"], "annotations").append(note)
        else:
            self.annotations.append(note)

    def _redact_last(self) -> None:
        """The message a scrubbed event went into shows the redaction marker only."""
        self.chunks = []
        message = self.canonical[-1]
        message["parts"] = [{"type": "text", "text": REDACTION_TEXT}]
        message["metadata"]["redacted"] = True

    def _add_part(self, message: CanonicalMessage, part: Part) -> None:
        self._flush()
        message["parts"].append(part)

    # --- handlers --------------------------------------------------------------------------

    def _on_message_start(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        metadata = dict(as_object(data.get("metadata")) or {})
        if data.get("agentId") is not None:
            metadata["agentId"] = data["agentId"]
        self._open_message(
            seq, at_ms, str(data["role"]), requested_id=data.get("messageId"), metadata=metadata
        )

    def _on_text_delta(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        self._append_text(self._content_message(seq, at_ms), "text", str(data["delta"]))

    def _on_reasoning(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        message = self._content_message(seq, at_ms)
        self._append_text(message, "reasoning", str(data["text"]))
        signature = data.get("signature")
        if signature is not None:
            self._flush()
            last = message["parts"][-1]
            if last["type"] == "reasoning":
                last["signature"] = str(signature)

    def _on_tool_call(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        message = self._content_message(seq, at_ms)
        call_id, name = str(data["toolCallId"]), str(data["toolName"])
        self.tool_names[call_id] = name
        part = ToolCallPart(
            type="tool-call",
            toolCallId=call_id,
            toolName=name,
            input=copy.deepcopy(data.get("input")),
        )
        self._add_part(message, part)

    def _on_tool_result(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        if self.is_open and self.canonical[-1]["role"] == "tool":
            message = self.canonical[-1]
            self._touch(seq)
        else:
            message = self._open_message(seq, at_ms, "tool")
        call_id = str(data["toolCallId"])
        part = ToolResultPart(
            type="tool-result",
            toolCallId=call_id,
            toolName=as_str(data.get("toolName")) or self.tool_names.get(call_id, ""),
            output=copy.deepcopy(data.get("output")),
            isError=bool(data.get("isError", False)),
        )
        self._add_part(message, part)

    def _on_file(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        part = FilePart(type="file", mimeType=str(data["mimeType"]), url=str(data["url"]))
        name = data.get("name")
        if name is not None:
            part["name"] = str(name)
        self._add_part(self._content_message(seq, at_ms), part)

    def _on_step_started(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        self.steps_started += 1
        self.metadata["stepCount"] = self.steps_started
        if self.is_open:
            self._touch(seq)

    def _on_step_finished(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        target = self._last_assistant()
        meta = target["metadata"] if target is not None else self.metadata
        step: JsonObject = {"seq": seq}
        if data.get("finishReason") is not None:
            step["finishReason"] = data["finishReason"]
            meta["finishReason"] = data["finishReason"]
        usage = as_object(data.get("usage"))
        if usage:
            step["usage"] = copy.deepcopy(usage)
            _add_usage(object_at(meta, "usage"), usage)
        list_at(meta, "steps").append(step)
        if target is not None and usage:
            _add_usage(object_at(self.metadata, "usage"), usage)
        if target is not None and self.is_open and self.canonical[-1] is target:
            self._touch(seq)

    def _on_error(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        error: JsonObject = {"seq": seq, "message": data["message"]}
        if data.get("code") is not None:
            error["code"] = data["code"]
        if self.is_open:
            self._touch(seq)
            list_at(self.canonical[-1]["metadata"], "errors").append(error)
        self.errors.append(error)

    def _on_message(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        message = self._open_message(
            seq,
            at_ms,
            str(data["role"]),
            requested_id=data.get("id"),
            metadata=as_object(data.get("metadata")),
            created_at=as_str(data.get("createdAt")),
        )
        parts = data["parts"]
        given = (
            [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
        )
        message["parts"] = stored_parts(given, self.tool_names)
        self._close()

    def _on_message_end(self, seq: int, data: Mapping[str, JsonValue], at_ms: int | None) -> None:
        if self.is_open:
            self._touch(seq)
        self._close()


_HANDLERS = {
    "message-start": Projector._on_message_start,
    "text-delta": Projector._on_text_delta,
    "reasoning": Projector._on_reasoning,
    "tool-call": Projector._on_tool_call,
    "tool-result": Projector._on_tool_result,
    "file": Projector._on_file,
    "step-started": Projector._on_step_started,
    "step-finished": Projector._on_step_finished,
    "error": Projector._on_error,
    "message": Projector._on_message,
    "message-end": Projector._on_message_end,
}


def project(
    events: Iterable[Mapping[str, object]],
    *,
    run_id: str,
    parent_id: str | None = None,
    snapshot: Snapshot | None = None,
) -> Projection:
    """Project events (after snapshot, when given) into canonical messages."""
    if snapshot is not None:
        projector = Projector.from_snapshot(snapshot)
        if projector.run_id != run_id or projector.parent_id != parent_id:
            raise ValueError("snapshot belongs to another run or fork point")
    else:
        projector = Projector(run_id=run_id, parent_id=parent_id)
    return projector.apply_all(events).result()
