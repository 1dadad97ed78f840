"""Schemas of the shares router."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema

from transcripts.api.schemas.common import Id, InputSchema


class ShareIn(InputSchema):
    leafMessageId: Id | None = Field(
        None, description="The last message of the shared branch (default: the thread's head)"
    )
    expiresAt: str | None = Field(
        None,
        description="When the link stops working (ISO 8601 with a timezone; default: never)",
        examples=["2026-12-31T23:59:59Z"],
    )


# Made by api.shares.share_out, the one place a link becomes JSON.
class ShareOut(Schema):
    id: Id
    threadId: Id
    leafMessageId: Id
    createdAt: datetime
    expiresAt: datetime | None
    revokedAt: datetime | None
    status: str = Field(description="active, expired or revoked")


class NewShareOut(ShareOut):
    url: str = Field(description="The link, shown this once: only its hash is stored")


class ShareList(Schema):
    shares: list[ShareOut]
