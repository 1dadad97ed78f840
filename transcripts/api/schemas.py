"""Input and output schemas of the ingest API (camelCase JSON, ULID strings for ids)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    BaseModel,
    ModelWrapValidatorHandler,
    StrictInt,
    StrictStr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from transcripts.formats.checks import kind as json_kind

Id = Annotated[
    str, Field(description="A 26-character ULID", examples=["01JB8ZT6QK5X4V3N2M1P0R9S8T"])
]
JsonObject = dict[str, Any]
RunStatusName = Literal["queued", "streaming", "committed", "superseded", "failed", "cancelled"]


class InputSchema(Schema):
    """A request body (or an object inside one): a JSON object, nothing else.

    Ninja's Schema validates arbitrary objects by reading their attributes (ORM mode), so a
    body of `5`, `null` or `[]` would pass as an object with every field at its default.
    Input is JSON: validate it as plain pydantic, and refuse what is not an object.
    """

    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(
        cls, values: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if not isinstance(values, dict | BaseModel):
            raise ValueError(f"must be a JSON object, not {json_kind(values)}")
        return handler(values)


class ErrorBody(Schema):
    code: str
    message: str
    details: JsonObject


class ErrorOut(Schema):
    """Every error response: {"error": {"code", "message", "details"}}."""

    error: ErrorBody


# --- threads -----------------------------------------------------------------------------


class ThreadIn(InputSchema):
    title: str = Field("", max_length=500)
    metadata: JsonObject = Field(default_factory=dict)
    agents: JsonObject = Field(default_factory=dict)
    id: Id | None = Field(None, description="A client-chosen ULID makes the call idempotent")


class ThreadOut(Schema):
    id: Id
    title: str
    metadata: JsonObject
    agents: JsonObject
    parentThreadId: Id | None
    headMessageId: Id | None
    hidden: bool
    locked: bool
    createdAt: datetime
    updatedAt: datetime


class ThreadPage(Schema):
    threads: list[ThreadOut]
    nextCursor: str | None


class MessageOut(Schema):
    """A canonical message."""

    id: Id
    parentMessageId: Id | None
    role: Literal["user", "assistant", "system", "tool"]
    parts: list[JsonObject]
    createdAt: str
    metadata: JsonObject


class ThreadMessageOut(MessageOut):
    runId: Id
    depth: int


class MessagePage(Schema):
    messages: list[ThreadMessageOut]
    nextCursor: str | None


# --- runs --------------------------------------------------------------------------------


class RunIn(InputSchema):
    forkFromMessageId: Id | None = Field(
        None, description="Absent: continue from the head. null: start a new root."
    )
    id: Id | None = Field(None, description="A client-chosen ULID makes the call idempotent")
    metadata: JsonObject = Field(default_factory=dict)


class RunOut(Schema):
    id: Id
    threadId: Id
    forkFromMessageId: Id | None
    status: RunStatusName
    supersededBy: Id | None
    lastSeq: int
    error: JsonObject | None
    usage: JsonObject
    generator: str
    model: str
    metadata: JsonObject
    createdAt: datetime
    startedAt: datetime | None
    firstEventAt: datetime | None
    finishedAt: datetime | None


class RunMessagesOut(Schema):
    """A run's projection: its messages as they stand, even mid-stream."""

    runId: Id
    status: str
    lastSeq: int
    open: bool = Field(description="Whether the last message is still open")
    messages: list[MessageOut]
    errors: list[JsonObject]
    annotations: list[JsonObject]
    metadata: JsonObject


_RUN_ERROR_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "code": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            },
            "required": ["message"],
            "additionalProperties": True,
        },
    ],
    "description": 'A message, or an object with a "message" string (and e.g. a "code");'
    " other keys are kept",
}


class FailIn(InputSchema):
    error: Annotated[Any, WithJsonSchema(_RUN_ERROR_SCHEMA)]

    @field_validator("error", mode="before")
    @classmethod
    def _message_or_object(cls, value: Any) -> Any:
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            code = value.get("code")
            if code is None or isinstance(code, str) or type(code) is int:
                return value
            raise ValueError("error.code must be a string or an integer")
        raise ValueError('must be a message, or an object with a "message" string')


# --- events ------------------------------------------------------------------------------


class EventIn(InputSchema):
    seq: StrictInt = Field(ge=1, description="Continues the run's lastSeq without gaps")
    kind: StrictStr = Field(
        description="message-start, text-delta, reasoning, tool-call, tool-result, file,"
        " step-started, step-finished, error, message, message-end, data-*, system.*"
    )
    data: Any = Field(default_factory=dict)
    at: StrictStr | None = Field(None, description="ISO 8601 with a timezone; default: now")


class EventBatchIn(InputSchema):
    events: list[EventIn]


class AppendOut(Schema):
    lastSeq: int
    accepted: int
    duplicates: int


class EventOut(Schema):
    seq: int
    kind: str
    data: Any
    at: datetime


class EventPage(Schema):
    events: list[EventOut]
    nextAfterSeq: int
    hasMore: bool


class AiSdkOut(AppendOut):
    status: str
    committed: bool
