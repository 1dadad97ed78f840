"""Schemas of the runs router."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from ninja import Field, Schema
from pydantic import AliasPath, WithJsonSchema, field_validator

from transcripts.api.schemas.common import (
    Id,
    InputSchema,
    JsonObject,
    MessageOut,
    RunStatusName,
    only_what_it_reads,
)

if TYPE_CHECKING:
    from transcripts.models import Run


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


def run_out(run: Run, *, content: bool) -> Run | JsonObject:
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


_RUN_ERROR_SCHEMA: JsonObject = {
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
    error: Annotated[str | JsonObject, WithJsonSchema(_RUN_ERROR_SCHEMA)]

    @field_validator("error", mode="before")
    @classmethod
    def _message_or_object(cls, value: object) -> str | JsonObject:
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            code = value.get("code")
            if code is None or isinstance(code, str) or type(code) is int:
                return value
            raise ValueError("error.code must be a string or an integer")
        raise ValueError('must be a message, or an object with a "message" string')
