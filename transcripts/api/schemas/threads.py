"""Schemas of the threads router."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ninja import Field, Schema

from transcripts.api.schemas.common import (
    Id,
    InputSchema,
    JsonObject,
    MessageOut,
    only_what_it_reads,
)

if TYPE_CHECKING:
    from transcripts.models import Message, Thread


class ThreadIn(InputSchema):
    title: str = Field("", max_length=500)
    metadata: JsonObject = Field(default_factory=dict)
    agents: JsonObject = Field(default_factory=dict)
    id: Id | None = Field(None, description="A client-chosen ULID makes the call idempotent")


class ThreadPatch(InputSchema):
    title: str | None = Field(None, description="A new title: 1 to 200 characters")
    tags: list[str] | None = Field(
        None, description="The thread's tags, replacing them all (new ones join the vocabulary)"
    )
    archived: bool | None = Field(None, description="Archive (true) or unarchive (false)")


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
    archived: bool
    tags: list[str] = Field(validation_alias="tag_names")
    createdAt: datetime = Field(validation_alias="created_at")
    updatedAt: datetime = Field(validation_alias="updated_at")


# Read from a Thread row, for a token with ingest but not read: ids and state, no content.
class ThreadStatusOut(Schema):
    id: Id
    parentThreadId: Id | None = Field(validation_alias="parent_thread_id")
    headMessageId: Id | None = Field(validation_alias="head_id")
    hidden: bool
    locked: bool
    archived: bool
    createdAt: datetime = Field(validation_alias="created_at")
    updatedAt: datetime = Field(validation_alias="updated_at")


def thread_out(thread: Thread, *, content: bool) -> Thread | JsonObject:
    """thread as the caller may see it: whole, or its ids and state only."""
    return thread if content else only_what_it_reads(thread, ThreadStatusOut)


class ThreadPage(Schema):
    threads: list[ThreadOut]
    nextCursor: str | None


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
