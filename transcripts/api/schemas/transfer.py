"""Schemas of the import and export router."""

from __future__ import annotations

from ninja import Field, Schema

from transcripts.api.schemas.common import Id, JsonObject


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
