"""What every schema module shares: ids, JSON objects, input objects, the error shape, and the
canonical message (a thread's and a run's)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from ninja import Field, Schema
from pydantic import BaseModel, ModelWrapValidatorHandler, ValidationInfo, model_validator

from transcripts.formats.validation import json_kind

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
        cls, values: object, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        if not isinstance(values, dict | BaseModel):
            raise ValueError(f"must be a JSON object, not {json_kind(values)}")
        return handler(values)


def only_what_it_reads(row: object, schema: type[Schema]) -> JsonObject:
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


# Read from a canonical message dict (a projection's).
class MessageOut(Schema):
    """A canonical message."""

    id: Id
    parentMessageId: Id | None
    role: Literal["user", "assistant", "system", "tool"]
    parts: list[JsonObject]
    createdAt: str
    metadata: JsonObject
