"""Schemas of the AI SDK stream router."""

from __future__ import annotations

from ninja import Field, Schema
from pydantic import AliasPath


# Read from {"append": AppendResult, "status": the run's status, "committed": bool}.
class AiSdkOut(Schema):
    lastSeq: int = Field(validation_alias=AliasPath("append", "last_seq"))
    accepted: int = Field(validation_alias=AliasPath("append", "accepted"))
    duplicates: int = Field(validation_alias=AliasPath("append", "duplicates"))
    status: str
    committed: bool
