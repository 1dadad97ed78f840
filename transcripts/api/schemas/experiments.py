"""Schemas of experiments (issue 29): the request that makes one, an experiment with its
progress and summary, the rows of its results, and the bodies of its actions."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from transcripts.api.schemas.common import Id, InputSchema, JsonObject

ForkRuleName = Literal["last-user", "message", "each-user"]


class ExperimentIn(InputSchema):
    name: str = Field(description="What the experiment tries, e.g. 'brief answers'")
    description: str = ""
    project: str | None = Field(
        None, description="The project's slug (a browser session; a token: its own)"
    )
    generator: str = Field("demo", description="The candidate's generator: demo or openai")
    model: str = Field("", description="The candidate's model ('' for the generator's default)")
    parameters: JsonObject = Field(
        default_factory=dict, description="temperature, maxTokens, delayMs (demo)"
    )
    systemPrompt: str = Field("", description="A system prompt for the candidate ('' : theirs)")
    systemPromptMode: Literal["replace", "prefix"] = Field(
        "replace", description="Replace the thread's system messages, or come before them"
    )
    forkRule: ForkRuleName = Field(
        "last-user",
        description="last-user: answer each thread's last user message again; message: the "
        "message forks names; each-user: every user turn, each on its own branch",
    )
    filter: str = Field("", description="A thread-list query string (e.g. `q=refund&tag=vip`)")
    tag: str = Field("", description="Every thread with this tag")
    queueId: int | None = Field(None, description="The threads of this annotation queue")
    threadIds: list[Id] = Field(default_factory=list, description="Threads, at most 10,000")
    forks: dict[str, str] = Field(
        default_factory=dict, description="forkRule message: threadId -> the message to answer"
    )
    evaluators: list[JsonObject] = Field(
        default_factory=list,
        description='Run on each pair, e.g. [{"type": "exact-match"}]',
    )
    concurrency: int = Field(4, description="Items generated at once (1 to 64)")


class RateOut(Schema):
    hits: int
    total: int
    value: float | None = Field(description="hits / total (null for none)")
    low: float | None = Field(description="The Wilson 95 % interval's low end")
    high: float | None = Field(description="The Wilson 95 % interval's high end")


class MetricOut(Schema):
    count: int
    mean: float | None
    p50: float | None
    p95: float | None


class EvaluatorRateOut(Schema):
    name: str
    candidate: RateOut = Field(description="How often the candidate passed")
    baseline: RateOut = Field(description="How often the baseline passed (when it is judged)")


class SummaryOut(Schema):
    wins: int = Field(description="Pairs where the candidate is better")
    losses: int = Field(description="Pairs where the baseline is better")
    ties: int
    unjudged: int = Field(description="Finished pairs without a verdict")
    winRate: RateOut = Field(description="Wins among the judged pairs")
    metrics: dict[str, dict[str, MetricOut]] = Field(
        description="baseline / candidate -> tokensIn, tokensOut, latencyMs, ttftMs, cost, length"
    )
    costDelta: float | None = Field(description="What the candidates cost minus the baselines")
    evaluators: list[EvaluatorRateOut]


class ExperimentOut(Schema):
    id: Id
    name: str
    description: str
    status: Literal["running", "paused", "cancelled", "completed"]
    generator: str
    model: str
    parameters: JsonObject
    systemPrompt: str
    systemPromptMode: str
    forkRule: ForkRuleName
    source: JsonObject = Field(description="Where the threads came from")
    evaluators: list[JsonObject]
    concurrency: int
    threadCount: int
    itemCount: int
    createdAt: datetime
    finishedAt: datetime | None
    progress: dict[str, int] = Field(description="Items per status, and the total")
    summary: SummaryOut


class ExperimentList(Schema):
    experiments: list[ExperimentOut]


class ResultRowOut(Schema):
    position: int
    itemId: int
    threadId: Id
    threadTitle: str
    forkFromMessageId: Id | None
    status: str
    error: JsonObject | None
    baselineRunId: Id | None
    candidateRunId: Id | None
    baselineText: str | None = Field(description="null when the caller may not read the thread")
    candidateText: str | None
    baselineTokensIn: float | None
    baselineTokensOut: float | None
    baselineLatencyMs: float | None
    baselineTtftMs: float | None
    baselineCost: float | None
    baselineLength: float | None
    candidateTokensIn: float | None
    candidateTokensOut: float | None
    candidateLatencyMs: float | None
    candidateTtftMs: float | None
    candidateCost: float | None
    candidateLength: float | None
    outcome: str = Field(description="win, loss, tie or '' (not judged)")
    judgeOutcome: str
    personOutcome: str
    disagreement: bool
    evaluations: list[JsonObject]
    adoptedAt: datetime | None


class ResultPageOut(Schema):
    rows: list[ResultRowOut]
    total: int = Field(description="Rows the filter keeps")
    page: int
    pageSize: int
    pages: int


class AdoptIn(InputSchema):
    itemIds: list[int] = Field(default_factory=list, description="The items to adopt")
    winners: bool = Field(False, description="Adopt every item where the candidate won")


class SkippedOut(Schema):
    itemId: int
    reason: str


class AdoptOut(Schema):
    adopted: list[int]
    skipped: list[SkippedOut]


class DiscardIn(InputSchema):
    delete: bool = Field(False, description="Delete the candidates (a project admin)")


class DiscardOut(Schema):
    status: str
    deleted: int = Field(description="Candidate runs deleted")


class JudgeIn(InputSchema):
    verdict: Literal["a", "b", "t"] = Field(
        description="a: the baseline is better, b: the candidate, t: a tie"
    )


class JudgeOut(Schema):
    itemId: int
    outcome: str
    personOutcome: str
