"""Schemas of the AI SDK chat router."""

from __future__ import annotations

from typing import Literal

from ninja import Field, Schema

from transcripts.api.schemas.common import JsonObject
from transcripts.ledger.threads import MAX_EXTERNAL_ID


class ChatParameters(Schema):
    """How the answer is generated (the Reply form's options)."""

    temperature: float | None = Field(None, ge=0, le=2)
    maxTokens: int | None = Field(None, ge=1, le=100_000)
    systemPrompt: str | None = Field(None, max_length=20_000)
    delayMs: int | None = Field(None, ge=0, le=5_000, description="The demo's pace per token")


class ChatIn(Schema):
    """The body `DefaultChatTransport` posts (fields the app adds through `body` are ignored,
    except the generation options below)."""

    id: str = Field(..., min_length=1, max_length=MAX_EXTERNAL_ID, description="The chat id")
    messages: list[JsonObject] | None = Field(
        None, max_length=10_000, description="The whole UIMessage list, the new message last"
    )
    message: JsonObject | None = Field(
        None, description="Only the new (or regenerated) message; the thread is the history"
    )
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: str | None = Field(
        None, max_length=MAX_EXTERNAL_ID, description="The edited or regenerated message"
    )
    generator: str | None = Field(None, max_length=100)
    model: str | None = Field(None, max_length=200)
    parameters: ChatParameters | None = None
