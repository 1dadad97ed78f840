"""Schemas of the scores router: scores and score configs (issue 28)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from transcripts.api.schemas.common import Id, InputSchema

ScoreSourceName = Literal["api", "evaluator"]
DataTypeName = Literal["numeric", "categorical", "boolean"]
WritersName = Literal["people", "api", "both"]


class ScoreIn(InputSchema):
    messageId: Id | None = Field(None, description="Score this message (give exactly one target)")
    runId: Id | None = Field(None, description="Score this run")
    threadId: Id | None = Field(None, description="Score this thread")
    name: str = Field(description="The score's name; a config of this name checks it")
    value: float | None = Field(None, description="A number (numeric, or 1/0 for boolean)")
    label: str | None = Field(None, description="A label (categorical, or true/false)")
    comment: str | None = Field(None, description="Why (up to 2,000 characters)")
    source: ScoreSourceName = Field("api", description="api (default) or evaluator")
    externalId: str | None = Field(
        None, description="Your id of the score: sending it again updates the score"
    )


# Made by api.scores.score_out, the one place a score becomes JSON.
class ScoreOut(Schema):
    id: Id
    targetType: Literal["message", "run", "thread"]
    threadId: Id
    runId: Id | None
    messageId: Id | None
    name: str
    value: float | None
    label: str | None
    comment: str
    source: Literal["person", "api", "evaluator"]
    configId: int | None
    author: str | None = Field(description="The member's username or the token's name")
    externalId: str | None
    createdAt: datetime
    updatedAt: datetime


class ScorePage(Schema):
    scores: list[ScoreOut]
    nextCursor: str | None


class ScoreConfigIn(InputSchema):
    name: str = Field(description="Unique among the project's configs that are not archived")
    dataType: DataTypeName
    min: float | None = Field(None, description="Lowest value (numeric only)")
    max: float | None = Field(None, description="Highest value (numeric only)")
    labels: list[str] = Field(default_factory=list, description="The labels (categorical only)")
    description: str = ""
    writers: WritersName = Field("both", description="Who may write it: people, api or both")


# Made by api.scores.config_out.
class ScoreConfigOut(Schema):
    id: int
    name: str
    dataType: DataTypeName
    min: float | None
    max: float | None
    labels: list[str]
    description: str
    writers: WritersName
    createdAt: datetime
    archivedAt: datetime | None


class ScoreConfigList(Schema):
    configs: list[ScoreConfigOut]
    scoresNeedConfig: bool = Field(description="Whether a score must name one of these configs")
