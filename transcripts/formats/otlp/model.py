"""The shapes shared by the OTLP receiver, the conventions and the tree writer.

A span is decoded once into `SpanData` (convention-neutral, plain Python values). Each
convention module under `formats/otlp/conventions/` turns the spans it recognizes into
`LlmCall`s: one model call with the conversation it was given and what it answered, as
`CallMessage`s (canonical role and parts, `transcripts.message_schema`, not yet checked).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypeAlias, TypedDict

# An OTLP AnyValue as a plain Python value: kvlists are dicts, arrays lists, bytes stay bytes.
AttributeValue: TypeAlias = (
    "str | bool | int | float | bytes | list[AttributeValue] | dict[str, AttributeValue] | None"
)
Attributes: TypeAlias = Mapping[str, AttributeValue]


@dataclass(frozen=True)
class SpanEvent:
    """An event recorded on a span (older GenAI conventions put messages here)."""

    name: str
    time_ns: int
    attributes: Attributes


@dataclass(frozen=True)
class SpanData:
    """One decoded span: ids in lowercase hex, attribute values as plain Python values."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: tuple[SpanEvent, ...] = ()
    status_code: int = 0  # 0 unset, 1 ok, 2 error (OTLP's StatusCode)
    status_message: str = ""
    resource: Attributes = field(default_factory=dict)
    scope: str = ""


class CallMessage(TypedDict):
    """A message as a convention reads it: a canonical role, canonical parts and metadata whose
    values may still be attribute values JSON cannot hold (bytes, tuples) until the tree writer
    makes them plain and checks them against the schema."""

    role: str
    parts: list[dict[str, Any]]  # readers index parts by any field without narrowing
    metadata: NotRequired[dict[str, object]]


@dataclass
class LlmCall:
    """One model call as a convention read it from a span.

    `input_messages` is the whole history the model was given (system instructions first,
    as a `system` message), `output_messages` what it answered (usually one assistant
    message; tool results of the next call arrive in that call's input). Parts are canonical
    parts (text, reasoning with its signature, tool-call, tool-result, file).
    """

    span: SpanData
    convention: str
    input_messages: list[CallMessage]
    output_messages: list[CallMessage]
    conversation_id: str | None = None
    model: str | None = None
    provider: str | None = None
    usage: dict[str, int] = field(default_factory=dict)  # inputTokens, outputTokens, ...
    finish_reason: str | None = None
    agent_name: str | None = None
    error: str | None = None
    response_id: str | None = None  # the provider's id of the answer (gen_ai.response.id)


class SpanRejected(Exception):
    """A span a convention claims but cannot read; reported in the OTLP partial_success."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
