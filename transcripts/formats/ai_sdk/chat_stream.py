"""A run's events as the AI SDK's UI message stream (what `useChat` reads): pure.

`UiChunker` takes events in, UI message chunks out. It folds the events through the
projector as the ledger will, so the `start` chunk names the assistant message by the id it
is stored under, and a resumed stream (a replay from seq 1) names it the same. Text and
reasoning become `*-start`/`*-delta`/`*-end` parts, tool calls and results tool chunks, steps
`start-step`/`finish-step`; a user message in the run (an edit) is the client's already and
is left out. The run's end becomes `finish` (or `error`, `abort`), then `data: [DONE]`.

`api/chat_stream.py` feeds it from the event log as the worker appends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from transcripts.formats.document import output_text, parts_of
from transcripts.jsonvalue import JsonObject, JsonValue, as_str, object_of, text_of
from transcripts.projector import Projector

HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
CONTENT_TYPE = "text/event-stream; charset=utf-8"
DONE_FRAME = "data: [DONE]\n\n"
KEEPALIVE_FRAME = ": keep-alive\n\n"
# The finish reasons the AI SDK accepts; ours ("stopped", a provider's own) are "other".
FINISH_REASONS = frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"})
ANSWER_ROLES = ("assistant", "tool")
# Chunks the AI SDK adapter kept as system.ai-sdk.<type> events, with the string fields each
# needs to be read back by the client.
_REPLAYED_SYSTEM_CHUNKS = {
    "source-url": ("sourceId", "url"),
    "source-document": ("sourceId", "mediaType", "title"),
}
_SYSTEM_PREFIX = "system.ai-sdk."
Chunk = JsonObject
# The run statuses (transcripts.models.RunStatus) and the finish reason of a stopped answer
# (transcripts.ledger.lifecycle.STOPPED) the stream tells apart: formats/ reads no models.
FAILED = "failed"
CANCELLED = "cancelled"
STOPPED = "stopped"


def frame(chunk: Mapping[str, JsonValue]) -> str:
    """One chunk as an SSE frame."""
    return f"data: {json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))}\n\n"


@dataclass
class UiChunker:
    """Turns a run's events, in seq order, into UI message chunks of its answer."""

    run_id: str
    parent_id: str | None
    projector: Projector = field(init=False)
    started: bool = False
    pending: list[Chunk] = field(default_factory=list)
    open_part: tuple[str, str] | None = None  # ("text" | "reasoning", part id)
    parts: int = 0
    step_open: bool = False
    finish_reason: str | None = None
    tool_calls: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.projector = Projector(run_id=self.run_id, parent_id=self.parent_id)

    # --- the answer's id and the start chunk ------------------------------------------------

    def answer_id(self) -> str | None:
        """The id the run's first assistant (or tool) message is stored under, once it exists."""
        return next(
            (as_str(m["id"]) for m in self.projector.messages if m["role"] in ANSWER_ROLES), None
        )

    def _emit(self, chunks: list[Chunk]) -> list[Chunk]:
        """chunks, after the start chunk once the answer's id is known (held back until then)."""
        if self.started:
            return chunks
        message_id = self.answer_id()
        if message_id is None:
            self.pending.extend(chunks)
            return []
        self.started = True
        held, self.pending = self.pending, []
        return [{"type": "start", "messageId": message_id}, *held, *chunks]

    # --- events -------------------------------------------------------------------------

    def event(self, *, seq: int, kind: str, data: object, at: object) -> list[Chunk]:
        """The chunks event seq adds to the stream."""
        self.projector.apply({"seq": seq, "kind": kind, "data": data, "at": at})
        return self._emit(self._chunks(kind, object_of(data)))

    def _chunks(self, kind: str, data: JsonObject) -> list[Chunk]:
        """The chunks of an event of kind with data, once the projector has folded it."""
        current = self.projector.messages[-1] if self.projector.messages else None
        in_answer = current is not None and current["role"] in ANSWER_ROLES
        chunks: list[Chunk] = []
        if kind in ("text-delta", "reasoning") and in_answer:
            part = "text" if kind == "text-delta" else "reasoning"
            text = data.get("delta") if part == "text" else data.get("text")
            chunks += self._delta(part, str(text or ""), data.get("providerMetadata"))
        elif kind in ("tool-call", "tool-result", "file") and in_answer:
            chunks += self._close_part()
            chunks += self._content(kind, data)
        elif kind == "message" and in_answer:
            chunks += self._close_part()
            for whole in parts_of(current) if current is not None else []:
                chunks += self._whole_part(whole)
        elif kind in ("message-start", "message-end", "message"):
            chunks += self._close_part()
        elif kind == "step-started":
            chunks += self._close_part() + self._finish_step()
            chunks.append({"type": "start-step"})
            self.step_open = True
        elif kind == "step-finished":
            if isinstance(reason := data.get("finishReason"), str):
                self.finish_reason = reason
            chunks += self._close_part() + self._finish_step()
        elif kind == "error":
            chunks.append({"type": "error", "errorText": str(data.get("message", ""))})
        elif kind.startswith("data-"):
            chunks.append(_data_chunk(kind, data))
        elif kind.startswith(_SYSTEM_PREFIX):
            chunks += _system_chunk(kind.removeprefix(_SYSTEM_PREFIX), data)
        return chunks

    def end(self, *, status: str, error: object) -> list[Chunk]:
        """The closing chunks of a run that ended with status (and error, when it failed)."""
        chunks = self._close_part() + self._finish_step()
        if status == FAILED:
            message = error.get("message") if isinstance(error, dict) else None
            chunks.append({"type": "error", "errorText": str(message or "the run failed")})
            chunks.append({"type": "finish", "finishReason": "error"})
        elif status == CANCELLED:
            chunks.append({"type": "abort", "reason": "the run was cancelled"})
        else:
            reason = self.finish_reason
            finish: Chunk = {"type": "finish"}
            finish["finishReason"] = reason if reason in FINISH_REASONS else "other"
            if reason == STOPPED:
                finish["messageMetadata"] = {"finishReason": STOPPED}
            chunks.append(finish)
        out = self._emit(chunks)
        if not self.started:  # nothing was answered: the client still needs its start chunk
            self.started = True
            out = [{"type": "start"}, *self.pending]
            self.pending = []
        return out

    # --- parts --------------------------------------------------------------------------

    def _delta(self, part: str, text: str, provider_metadata: JsonValue = None) -> list[Chunk]:
        chunks: list[Chunk] = []
        if self.open_part is None or self.open_part[0] != part:
            chunks += self._close_part()
            self.parts += 1
            self.open_part = (part, f"{part}-{self.parts}")
            chunks.append({"type": f"{part}-start", "id": self.open_part[1]})
        delta: Chunk = {"type": f"{part}-delta", "id": self.open_part[1], "delta": text}
        if isinstance(provider_metadata, dict):  # a reasoning signature, say
            delta["providerMetadata"] = provider_metadata
        if text or len(delta) > 3:
            chunks.append(delta)
        return chunks

    def _close_part(self) -> list[Chunk]:
        if self.open_part is None:
            return []
        part, part_id = self.open_part
        self.open_part = None
        return [{"type": f"{part}-end", "id": part_id}]

    def _finish_step(self) -> list[Chunk]:
        if not self.step_open:
            return []
        self.step_open = False
        return [{"type": "finish-step"}]

    def _whole_part(self, part: JsonObject) -> list[Chunk]:
        """A part of a complete `message` event, as the chunks that stream it."""
        if part["type"] in ("text", "reasoning"):
            return [*self._delta(text_of(part["type"]), text_of(part["text"])), *self._close_part()]
        if part["type"] == "tool-call":
            return self._content("tool-call", part)
        if part["type"] == "tool-result":
            return self._content("tool-result", part)
        if part["type"] == "file":
            return self._content("file", part)
        return []

    def _content(self, kind: str, data: JsonObject) -> list[Chunk]:
        if kind == "file":
            return [{"type": "file", "url": str(data["url"]), "mediaType": str(data["mimeType"])}]
        call_id = str(data["toolCallId"])
        if kind == "tool-call":
            self.tool_calls.add(call_id)
            call: Chunk = {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": str(data["toolName"]),
                "input": data.get("input"),
            }
            if isinstance(error_text := data.get("errorText"), str):
                call.update(type="tool-input-error", errorText=error_text)
            return [call]
        chunks: list[Chunk] = []
        if call_id not in self.tool_calls:
            # A result whose call came before this run: the client needs a part to put it in.
            self.tool_calls.add(call_id)
            name = str(data.get("toolName") or "tool")
            chunks.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": call_id,
                    "toolName": name,
                    "input": None,
                    "dynamic": True,
                }
            )
        if data.get("denied") is True:
            chunks.append({"type": "tool-output-denied", "toolCallId": call_id})
        elif data.get("isError"):
            error_text = data.get("errorText") or output_text(data.get("output"))
            chunks.append(
                {"type": "tool-output-error", "toolCallId": call_id, "errorText": error_text}
            )
        else:
            output = {"type": "tool-output-available", "toolCallId": call_id}
            chunks.append({**output, "output": data.get("output")})
        return chunks


def _data_chunk(kind: str, data: JsonObject) -> Chunk:
    """A data-* event as the chunk it came from (the adapter stores the chunk minus its type)."""
    chunk: Chunk = {"type": kind, "data": data.get("data") if "data" in data else dict(data)}
    if isinstance(chunk_id := data.get("id"), str):
        chunk["id"] = chunk_id
    if isinstance(transient := data.get("transient"), bool):
        chunk["transient"] = transient
    return chunk


def _system_chunk(chunk_type: str, data: JsonObject) -> list[Chunk]:
    """A chunk the AI SDK adapter kept as a system event, when the client can read it back."""
    required = _REPLAYED_SYSTEM_CHUNKS.get(chunk_type)
    if required is None or not all(isinstance(data.get(name), str) for name in required):
        return []
    return [{**data, "type": chunk_type}]


def unavailable_chunk() -> Chunk:
    """The error chunk of a stream the database went away from: resume it."""
    return {
        "type": "error",
        "errorText": "the database went away; resume the stream (GET …/stream) to continue",
    }
