"""Schemas of the generator jobs router: queued runs for outside stream layers."""

from __future__ import annotations

from ninja import Field, Schema

from transcripts.api.schemas.common import InputSchema, JsonObject
from transcripts.api.schemas.runs import RunOut


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
