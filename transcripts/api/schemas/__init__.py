"""Input and output schemas of the ingest API (camelCase JSON, ULID strings for ids).

Each output schema is the one place its wire object is made: handlers return model rows,
projections and ledger results, and the schema reads them (`validation_alias` names the
attribute a camelCase field comes from; `AliasPath` reaches into a response made of two
objects); a comment above each says what it reads, because a docstring would be published
as its OpenAPI description. Input schemas are separate and validate plain JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    AliasPath,
    BaseModel,
    ModelWrapValidatorHandler,
    StrictInt,
    StrictStr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from transcripts.formats.validation import json_kind

if TYPE_CHECKING:
    from transcripts.models import Message, Run, Thread

Id = Annotated[
    str, Field(description="A 26-character ULID", examples=["01JB8ZT6QK5X4V3N2M1P0R9S8T"])
]
JsonObject = dict[str, Any]
RunStatusName = Literal["queued", "streaming", "committed", "superseded", "failed", "cancelled"]
# Seqs and depths are PostgreSQL integers: larger numbers in a query are refused, not sent.
MAX_INT = 2**31 - 1


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


def only_what_it_reads(row: Any, schema: type[Schema]) -> dict[str, Any]:
    """The attributes of row that schema reads, and nothing else.

    An endpoint answering `Full | Status` validates this against the full schema first, which
    fails for want of its content fields, so the status schema makes the answer: content left
    out here cannot reach the wire. The row itself validates as the full schema.
    """
    names = [
        field.validation_alias if isinstance(field.validation_alias, str) else name
        for name, field in schema.model_fields.items()
    ]
    return {name: getattr(row, name) for name in names}


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


# Read from a Thread row.
class ThreadOut(Schema):
    id: Id
    title: str
    metadata: JsonObject
    agents: JsonObject
    externalId: str = Field("", validation_alias="external_id")
    parentThreadId: Id | None = Field(validation_alias="parent_thread_id")
    headMessageId: Id | None = Field(validation_alias="head_id")
    hidden: bool
    locked: bool
    createdAt: datetime = Field(validation_alias="created_at")
    updatedAt: datetime = Field(validation_alias="updated_at")


# Read from a Thread row, for a token with ingest but not read: ids and state, no content.
class ThreadStatusOut(Schema):
    id: Id
    parentThreadId: Id | None = Field(validation_alias="parent_thread_id")
    headMessageId: Id | None = Field(validation_alias="head_id")
    hidden: bool
    locked: bool
    createdAt: datetime = Field(validation_alias="created_at")
    updatedAt: datetime = Field(validation_alias="updated_at")


def thread_out(thread: Thread, *, content: bool) -> Thread | dict[str, Any]:
    """thread as the caller may see it: whole, or its ids and state only."""
    return thread if content else only_what_it_reads(thread, ThreadStatusOut)


class ThreadPage(Schema):
    threads: list[ThreadOut]
    nextCursor: str | None


# Read from a canonical message dict (a projection's).
class MessageOut(Schema):
    """A canonical message."""

    id: Id
    parentMessageId: Id | None
    role: Literal["user", "assistant", "system", "tool"]
    parts: list[JsonObject]
    createdAt: str
    metadata: JsonObject


# Read from a Message row: canonical as `Message.as_canonical` writes it, plus run and depth.
class ThreadMessageOut(MessageOut):
    runId: Id = Field(validation_alias="run_id")
    depth: int

    @staticmethod
    def resolve_parentMessageId(message: Message) -> str | None:
        """The parent's id."""
        return message.parent_id

    @staticmethod
    def resolve_createdAt(message: Message) -> str:
        """The creation time with microseconds and offset, as the canonical form has it."""
        return message.created_at.isoformat()


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


# Read from a Run row.
class RunOut(Schema):
    id: Id
    threadId: Id = Field(validation_alias="thread_id")
    forkFromMessageId: Id | None = Field(validation_alias="fork_from_id")
    status: RunStatusName
    supersededBy: Id | None = Field(validation_alias="superseded_by_id")
    lastSeq: int = Field(validation_alias="last_seq")
    error: JsonObject | None
    usage: JsonObject
    generator: str
    model: str
    metadata: JsonObject
    createdAt: datetime = Field(validation_alias="created_at")
    startedAt: datetime | None = Field(validation_alias="started_at")
    firstEventAt: datetime | None = Field(validation_alias="first_event_at")
    finishedAt: datetime | None = Field(validation_alias="finished_at")


# Read from a Run row, for a token with ingest but not read: ids, status and times only.
class RunStatusOut(Schema):
    id: Id
    threadId: Id = Field(validation_alias="thread_id")
    forkFromMessageId: Id | None = Field(validation_alias="fork_from_id")
    status: RunStatusName
    supersededBy: Id | None = Field(validation_alias="superseded_by_id")
    lastSeq: int = Field(validation_alias="last_seq")
    createdAt: datetime = Field(validation_alias="created_at")
    startedAt: datetime | None = Field(validation_alias="started_at")
    firstEventAt: datetime | None = Field(validation_alias="first_event_at")
    finishedAt: datetime | None = Field(validation_alias="finished_at")


def run_out(run: Run, *, content: bool) -> Run | dict[str, Any]:
    """run as the caller may see it: whole, or its ids, status and times only."""
    return run if content else only_what_it_reads(run, RunStatusOut)


# Read from {"run": Run, "projection": Projection}.
class RunMessagesOut(Schema):
    """A run's projection: its messages as they stand, even mid-stream."""

    runId: Id = Field(validation_alias=AliasPath("run", "id"))
    status: str = Field(validation_alias=AliasPath("run", "status"))
    lastSeq: int = Field(validation_alias=AliasPath("projection", "last_seq"))
    open: bool = Field(
        validation_alias=AliasPath("projection", "open"),
        description="Whether the last message is still open",
    )
    messages: list[MessageOut] = Field(validation_alias=AliasPath("projection", "messages"))
    errors: list[JsonObject] = Field(validation_alias=AliasPath("projection", "errors"))
    annotations: list[JsonObject] = Field(validation_alias=AliasPath("projection", "annotations"))
    metadata: JsonObject = Field(validation_alias=AliasPath("projection", "metadata"))


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


# Read from the ledger's AppendResult.
class AppendOut(Schema):
    lastSeq: int = Field(validation_alias="last_seq")
    accepted: int
    duplicates: int


# Read from an Event row.
class EventOut(Schema):
    seq: int
    kind: str
    data: Any
    at: datetime


class EventPage(Schema):
    events: list[EventOut]
    nextAfterSeq: int
    hasMore: bool


# Read from {"append": AppendResult, "status": the run's status, "committed": bool}.
class AiSdkOut(Schema):
    lastSeq: int = Field(validation_alias=AliasPath("append", "last_seq"))
    accepted: int = Field(validation_alias=AliasPath("append", "accepted"))
    duplicates: int = Field(validation_alias=AliasPath("append", "duplicates"))
    status: str
    committed: bool


# --- queued runs for outside stream layers -----------------------------------------------


class RunList(Schema):
    runs: list[RunOut]


class ClaimIn(InputSchema):
    worker: str = Field(min_length=1, max_length=200, description="who holds the lease")
    leaseSeconds: float = Field(30, gt=0, le=3600)


class ClaimOut(Schema):
    run: RunOut
    leaseExpiresAt: str
    parameters: JsonObject
    messages: list[JsonObject] = Field(
        description="The conversation to continue: the path to the fork point, then the run's"
    )


# --- import and export -------------------------------------------------------------------


# Read from the ImportResult of transcripts.interchange.
class ImportOut(Schema):
    format: str
    threadIds: list[Id] = Field(validation_alias="thread_ids")
    report: JsonObject = Field(
        description="threads, messages, branches, filesInlined, labelled, skipped [{where, "
        "what, why}] (the first 500) and skippedTotal"
    )


# Read from an ImportJob row.
class ImportJobOut(Schema):
    id: Id
    status: str
    format: str
    filename: str
    size: int
    bytesDone: int = Field(validation_alias="bytes_done")
    progress: float
    threadIds: list[Id] = Field(validation_alias="thread_ids")
    report: JsonObject = Field(description="as the 201 answer's, once the job is done")
    error: JsonObject | None
