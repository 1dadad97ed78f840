"""A run as a trace: its events, read once, become spans on a time axis (the run, its steps and
LLM calls, its tool calls) and readable segments (one per message part, not one per token).

Reading changes nothing; it is one query (`trace_events`), whatever the number of events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from transcripts.ids import to_uuid
from transcripts.models import Run, RunStatus
from transcripts.projector import REDACTION_TEXT

# Where each vocabulary spells its token counts (AI SDK and ours first, then OpenAI,
# Anthropic and Gemini as providers report them).
INPUT_TOKEN_KEYS = (
    "inputTokens",
    "input_tokens",
    "promptTokens",
    "prompt_tokens",
    "promptTokenCount",
)
OUTPUT_TOKEN_KEYS = (
    "outputTokens",
    "output_tokens",
    "completionTokens",
    "completion_tokens",
    "candidatesTokenCount",
)
# Events whose text is merged into the segment before it.
TEXT_KINDS = {"text-delta": "text", "reasoning": "reasoning"}
# Events no further apart than this share one instant: an import without timestamps, or a
# batch posted without times of its own (the database stamps them all alike).
ONE_INSTANT = timedelta(milliseconds=1)


def carries_timing(first: datetime | None, last: datetime | None) -> bool:
    """Whether events stamped from first to last were timed: False when they share one
    instant (ONE_INSTANT); True when there are none (the run's start and end time it)."""
    if first is None or last is None:
        return True
    return last - first > ONE_INSTANT


def _count(usage: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def token_counts(usage: Any) -> tuple[int | None, int | None]:
    """(input, output) tokens of a usage object in any provider's spelling (None: not given)."""
    if not isinstance(usage, Mapping):
        return None, None
    return _count(usage, INPUT_TOKEN_KEYS), _count(usage, OUTPUT_TOKEN_KEYS)


@dataclass
class Span:
    """One bar of the waterfall: the run, a step or LLM call, a tool call, or an error."""

    key: str
    kind: str  # "run", "llm", "step", "tool" or "error"
    name: str
    start: datetime | None
    end: datetime | None
    depth: int
    seq: int = 0
    detail: str = ""
    model: str = ""
    finish_reason: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    # Not finished: still running (an open run), or never finished (a closed one).
    unfinished: bool = False
    failed: bool = False

    def add_usage(self, usage: Any) -> None:
        """Count a usage object's tokens into the span."""
        given_in, given_out = token_counts(usage)
        if given_in is not None:
            self.input_tokens = (self.input_tokens or 0) + given_in
        if given_out is not None:
            self.output_tokens = (self.output_tokens or 0) + given_out

    @property
    def seconds(self) -> float | None:
        """How long the span took (None when a time is unknown)."""
        if self.start is None or self.end is None:
            return None
        return max((self.end - self.start).total_seconds(), 0.0)


@dataclass
class Segment:
    """A piece of content as a reader wants it: a merged text or reasoning part, a tool call or
    result, a file, a complete message, an error or an annotation (data-*, system.*)."""

    kind: str
    role: str
    first_seq: int
    start: datetime | None
    span_key: str
    name: str = ""
    value: Any = None
    is_error: bool = False
    chunks: list[str] = field(default_factory=list)
    last_seq: int = 0
    end: datetime | None = None

    @property
    def text(self) -> str:
        """The merged text of the segment."""
        return "".join(self.chunks)


@dataclass
class Trace:
    """What a run's events amount to as a trace."""

    root: Span
    spans: list[Span]
    segments: list[Segment]
    event_count: int
    axis_start: datetime | None
    axis_end: datetime | None
    # When the first text or reasoning arrived (the "first token").
    first_token_at: datetime | None = None
    # False when every event shares one instant: the trace has no timing to draw.
    timed: bool = True

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the start of the run to its first text or reasoning (never below 0)."""
        if self.first_token_at is None or self.root.start is None:
            return None
        return max((self.first_token_at - self.root.start).total_seconds(), 0.0)


class _Builder:
    """Folds events, in seq order, into spans and segments."""

    def __init__(self, run: Run, now: datetime) -> None:
        self.run = run
        start = run.started_at or run.created_at
        self.root = Span(key="run", kind="run", name="Run", start=start, end=None, depth=0)
        self.root.model = run.model
        self.spans: list[Span] = [self.root]
        self.segments: list[Segment] = []
        self.step: Span | None = None
        self.message: Span | None = None  # an assistant message streamed outside any step
        self.message_role = "assistant"
        self.message_agent = ""
        self.model = run.model
        self.tools: dict[str, Span] = {}
        self.last_tool_key = ""
        self.first_token_at: datetime | None = None
        self.merging: Segment | None = None
        self.previous_at: datetime | None = None
        self.last_step_end: datetime | None = None
        self.steps = 0
        self.seen_model = run.model  # a model named anywhere in the run: its steps share it
        self.count = 0
        self.times: list[datetime] = []
        self.now = now

    # --- spans -----------------------------------------------------------------------------

    def _parent(self) -> Span:
        return self.step or self.message or self.root

    def _add(self, span: Span) -> Span:
        self.spans.append(span)
        return span

    def _llm_name(self, model: str, unknown: str = "Step") -> tuple[str, str]:
        """An LLM call when the model is known; else a step (or an answer) of unknown origin."""
        return ("llm", "LLM call") if model else ("step", unknown)

    def _open_step(self, seq: int, at: datetime | None) -> None:
        self._close_message()
        if self.step is not None:
            self.step.end, self.step.unfinished = at, True
        self.steps += 1
        kind, name = self._llm_name(self.model)
        self.step = self._add(
            Span(
                key=f"step-{seq}", kind=kind, name=f"{name} {self.steps}", start=at, end=None,
                depth=1, seq=seq, model=self.model,
            )
        )  # fmt: skip

    def _finish_step(self, seq: int, data: Mapping[str, Any], at: datetime | None) -> None:
        step = self.step
        if step is None:  # a step that never said it started: it began when the last one ended
            self._open_step(seq, self.last_step_end or self.root.start)
            step = self.step
            assert step is not None
        model = _model_of(data) or step.model
        step.model = model
        self.seen_model = self.seen_model or model
        step.kind, name = self._llm_name(model)
        step.name = f"{name} {self.steps}"
        step.end = at
        step.add_usage(data.get("usage"))
        if isinstance(data.get("finishReason"), str):
            step.finish_reason = data["finishReason"]
        self.last_step_end = at
        self.step = None

    def _message_span(self, seq: int, at: datetime | None) -> None:
        """Content outside any step: the assistant message it belongs to is the LLM call."""
        if self.step is not None or self.message_role != "assistant":
            return
        if self.message is None:
            kind, name = self._llm_name(self.model, "Answer")
            self.message = self._add(
                Span(
                    key=f"message-{seq}", kind=kind, name=name, start=at, end=at, depth=1,
                    seq=seq, model=self.model, detail=self.message_agent,
                )
            )  # fmt: skip
        else:
            self.message.end = at

    def _close_message(self) -> None:
        self.message = None

    def _tool_call(self, seq: int, part: Mapping[str, Any], at: datetime | None) -> None:
        call_id = str(part.get("toolCallId") or f"seq-{seq}")
        parent = self._parent()
        self.tools[call_id] = self._add(
            Span(
                key=f"tool-{seq}", kind="tool", name=str(part.get("toolName") or "tool"),
                start=at, end=None, depth=parent.depth + 1, seq=seq, detail=call_id,
                unfinished=True,
            )
        )  # fmt: skip

    def _tool_result(self, seq: int, part: Mapping[str, Any], at: datetime | None) -> None:
        call_id = str(part.get("toolCallId") or "")
        span = self.tools.pop(call_id, None)
        if span is None:  # a result whose call an earlier run (or stream) made
            parent = self._parent()
            name = str(part.get("toolName") or "tool")
            span = self._add(
                Span(
                    key=f"tool-{seq}", kind="tool", name=name, start=at, end=None,
                    depth=parent.depth + 1, seq=seq, detail=call_id,
                )
            )  # fmt: skip
        span.end, span.unfinished = at, False
        span.failed = bool(part.get("isError"))
        self.last_tool_key = span.key

    # --- segments --------------------------------------------------------------------------

    def _segment(self, kind: str, seq: int, at: datetime | None, **fields: Any) -> Segment:
        self.merging = None
        owner = self._parent()
        segment = Segment(
            kind=kind,
            role=fields.pop("role", self.message_role),
            first_seq=seq,
            last_seq=seq,
            start=at,
            end=at,
            span_key=owner.key,
            **fields,
        )
        self.segments.append(segment)
        return segment

    def _text(self, kind: str, seq: int, text: str, at: datetime | None) -> None:
        merging = self.merging
        if merging is None or merging.kind != kind:
            merging = self._segment(kind, seq, at)
            self.merging = merging
        merging.chunks.append(text)
        merging.last_seq, merging.end = seq, at

    def _message(self, seq: int, data: Mapping[str, Any], at: datetime | None) -> None:
        """A complete message: content segments, and for an answer the LLM call it came from
        (from the event before it to this one)."""
        role = str(data.get("role") or "assistant")
        metadata = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        parts = [p for p in data.get("parts") or [] if isinstance(p, Mapping)]
        self._close_message()
        if role == "assistant" and self.step is None:
            model = _model_of(metadata) or self.run.model
            kind, name = self._llm_name(model, "Answer")
            span = self._add(
                Span(
                    key=f"message-{seq}", kind=kind, name=name,
                    start=self.previous_at or self.root.start, end=at, depth=1, seq=seq,
                    model=model, detail=str(metadata.get("agentId") or ""),
                )
            )  # fmt: skip
            span.add_usage(metadata.get("usage"))
            if isinstance(metadata.get("finishReason"), str):
                span.finish_reason = metadata["finishReason"]
            self.message = span
        texts = [str(p.get("text", "")) for p in parts if p.get("type") == "text"]
        if texts or not parts:
            self._segment("message", seq, at, role=role, chunks=["\n\n".join(texts)])
        for part in parts:
            self._part(seq, part, at, role)
        self.message = None
        self.merging = None

    def _part(self, seq: int, part: Mapping[str, Any], at: datetime | None, role: str) -> None:
        kind = part.get("type")
        if kind == "reasoning":
            self._segment("reasoning", seq, at, role=role, chunks=[str(part.get("text", ""))])
        elif kind == "tool-call":
            self._tool_call(seq, part, at)
            self._tool_segment("tool-call", seq, part, at, role)
        elif kind == "tool-result":
            self._tool_result(seq, part, at)
            self._tool_segment("tool-result", seq, part, at, role)
        elif kind == "file":
            self._segment("file", seq, at, role=role, name=str(part.get("name") or ""), value=part)

    def _tool_segment(
        self, kind: str, seq: int, part: Mapping[str, Any], at: datetime | None, role: str
    ) -> None:
        value = part.get("input") if kind == "tool-call" else part.get("output")
        segment = self._segment(
            kind, seq, at, role=role, name=str(part.get("toolName") or ""), value=value,
            is_error=bool(part.get("isError")),
        )  # fmt: skip
        segment.span_key = self.spans[-1].key if kind == "tool-call" else self.last_tool_key

    # --- events ----------------------------------------------------------------------------

    def apply(self, event: Mapping[str, Any]) -> None:
        seq, kind, at = int(event["seq"]), str(event["kind"]), event.get("at")
        data = event.get("data") if isinstance(event.get("data"), Mapping) else {}
        assert isinstance(data, Mapping)
        at = at if isinstance(at, datetime) else None
        self.count += 1
        if at is not None:
            self.times.append(at)
        if kind in TEXT_KINDS:
            self.first_token_at = self.first_token_at or at
            self._after_tool_message()
            self._message_span(seq, at)
            text = str(data.get("delta" if kind == "text-delta" else "text", ""))
            if data.get("redacted") is True:  # scrubbed by a moderator: say so, once
                text = "" if self._says_redacted(TEXT_KINDS[kind]) else REDACTION_TEXT
            self._text(TEXT_KINDS[kind], seq, text, at)
            if data.get("signature") is not None:
                self.merging = None
        elif kind == "step-started":
            self._open_step(seq, at)
            self.merging = None
        elif kind == "step-finished":
            self._finish_step(seq, data, at)
        elif kind == "message-start":
            self._close_message()
            self.merging = None
            self.message_role = str(data.get("role") or "assistant")
            self.message_agent = str(data.get("agentId") or "")
            metadata = data.get("metadata")
            self.model = (_model_of(metadata) if isinstance(metadata, Mapping) else "") or (
                self.run.model
            )
        elif kind == "message-end":
            self._close_message()
            self.merging = None
        elif kind == "message":
            self._message(seq, data, at)
        elif kind in ("tool-call", "tool-result", "file"):
            if kind == "tool-result":
                self._close_message()
                self.message_role = "tool"
            else:
                self._after_tool_message()
                self._message_span(seq, at)
            self._part(seq, {**data, "type": kind}, at, self.message_role)
        elif kind == "error":
            self._error(seq, data, at)
        else:  # data-* and system.*: kept and shown, no part of a message
            self._segment("annotation", seq, at, name=kind, value=event.get("data"))
        self.previous_at = at or self.previous_at

    def _says_redacted(self, kind: str) -> bool:
        merging = self.merging
        return merging is not None and merging.kind == kind and REDACTION_TEXT in merging.chunks

    def _after_tool_message(self) -> None:
        if self.message_role == "tool":  # the projector's rule: content after a tool message
            self.message_role = "assistant"  # opens a new assistant message

    def _error(self, seq: int, data: Mapping[str, Any], at: datetime | None) -> None:
        owner = self._parent()
        owner.failed = True
        message = str(data.get("message") or "error")
        code = data.get("code")
        self._add(
            Span(
                key=f"error-{seq}", kind="error", name="Error", start=at, end=at,
                depth=owner.depth + 1, seq=seq, detail=message, failed=True,
            )
        )  # fmt: skip
        self._segment("error", seq, at, name=str(code or ""), chunks=[message], is_error=True)

    # --- the end ---------------------------------------------------------------------------

    def finish(self) -> Trace:
        run, root = self.run, self.root
        if run.is_open:
            root.end, root.unfinished = self.now, True
        else:
            root.end = run.finished_at or root.start
        # A stream layer may stamp its events itself: the run spans them all.
        if self.times and root.start is not None and root.end is not None:
            root.start, root.end = min(root.start, *self.times), max(root.end, *self.times)
        root.failed = root.failed or run.status == RunStatus.FAILED or bool(run.error)
        for span in self.spans[1:]:
            if span.end is None:
                span.end, span.unfinished = root.end, True
            if span.kind == "step" and span.name.startswith("Step") and self.seen_model:
                span.kind, span.model = "llm", self.seen_model
                span.name = span.name.replace("Step", "LLM call", 1)
        llm = [s for s in self.spans if s.kind in ("llm", "step")]
        if any(s.input_tokens is not None or s.output_tokens is not None for s in llm):
            for span in llm:
                root.input_tokens = _plus(root.input_tokens, span.input_tokens)
                root.output_tokens = _plus(root.output_tokens, span.output_tokens)
        else:
            root.add_usage(run.usage)
        times = [t for t in (*self.times, root.start, root.end) if t is not None]
        return Trace(
            root=root,
            spans=self.spans,
            segments=self.segments,
            event_count=self.count,
            axis_start=min(times) if times else None,
            axis_end=max(times) if times else None,
            first_token_at=self.first_token_at,
            timed=carries_timing(min(self.times, default=None), max(self.times, default=None)),
        )


def _plus(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return (total or 0) + value


def _model_of(data: Mapping[str, Any]) -> str:
    """The model a step, message or AI SDK finish names (data.model, messageMetadata.model)."""
    for source in (data, data.get("messageMetadata"), data.get("response")):
        if isinstance(source, Mapping) and isinstance(source.get("model"), str):
            return str(source["model"])
    return ""


def trace_of(run: Run, events: Iterable[Mapping[str, Any]], *, now: datetime) -> Trace:
    """The trace of events (seq order) of run; now ends the spans of an open run."""
    builder = _Builder(run, now)
    for event in events:
        builder.apply(event)
    return builder.finish()


# Most of a long run is text deltas: the database hands their text over as is and their time as
# a number, which spares parsing a JSON document and a timestamp per token.
_TRACE_EVENTS = """
    SELECT seq, kind, extract(epoch FROM at)::float8,
           CASE WHEN kind = 'text-delta' THEN data->>'delta' END,
           CASE WHEN kind = 'text-delta' AND NOT data ? 'redacted' THEN NULL ELSE data::text END
    FROM transcripts_event WHERE run_id = %s ORDER BY seq
"""


def trace_events(run: Run) -> Iterator[dict[str, Any]]:
    """The run's events in seq order, as the trace reads them (one query)."""
    with connection.cursor() as cursor:
        cursor.execute(_TRACE_EVENTS, [to_uuid(run.id)])
        while rows := cursor.fetchmany(2000):
            for seq, kind, epoch, delta, data in rows:
                yield {
                    "seq": seq,
                    "kind": kind,
                    "at": datetime.fromtimestamp(epoch, UTC),
                    "data": {"delta": delta} if data is None else json.loads(data),
                }


def run_trace(run: Run, *, now: datetime) -> Trace:
    """The run's trace, from one read of its events."""
    return trace_of(run, trace_events(run), now=now)
