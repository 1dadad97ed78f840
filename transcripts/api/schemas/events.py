"""Schemas of the events router."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import StrictInt, StrictStr

from transcripts.api.schemas.common import MAX_INT, InputSchema


class EventIn(InputSchema):
    seq: StrictInt = Field(ge=1, le=MAX_INT, description="Continues the run's lastSeq without gaps")
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
