"""API router: a project's figures over a window, the numbers its dashboard charts."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Router, Schema
from ninja.params.functions import Query

from transcripts import permissions
from transcripts.api.access import caller, get_project_for_caller
from transcripts.api.auth import read_auth
from transcripts.api.errors import ERRORS
from transcripts.permissions import READ, TokenAccess
from transcripts.selectors.stats import (
    Bucket,
    Named,
    ProjectStats,
    Timing,
    Usage,
    failure_rate,
    parse_window,
    project_stats,
)

router = Router(auth=read_auth)  # mounted at /projects

DEFAULT_WINDOW = timedelta(days=7)


class StatsRunsOut(Schema):
    """Runs begun in a span, by status: completed (committed or superseded), failed, stopped
    (cancelled), open (queued or streaming)."""

    total: int
    completed: int
    failed: int
    stopped: int
    open: int


class StatsQuantilesOut(Schema):
    """p50 and p95 in seconds (null: no run had the timing)."""

    p50: float | None
    p95: float | None


class StatsUsageOut(Schema):
    """A model's or an agent's runs, failures, tokens and cost (null: no price known)."""

    name: str
    runs: int
    failed: int
    inputTokens: int
    outputTokens: int
    cost: float | None


class StatsBucketOut(Schema):
    """One hour or day of the window."""

    start: datetime
    runs: StatsRunsOut
    failureRate: float | None
    latency: StatsQuantilesOut
    timeToFirstToken: StatsQuantilesOut
    models: list[StatsUsageOut]


class StatsThreadOut(Schema):
    """A thread with the runs begun in it during the window."""

    id: str
    title: str
    runs: int
    failed: int


class StatsOut(Schema):
    """A project's figures over [from, to): totals, per bucket (`unit`: hour or day), and the
    ten busiest models, agents and threads."""

    project: str
    from_: datetime = Field(serialization_alias="from")
    to: datetime
    unit: str
    runs: StatsRunsOut
    failureRate: float | None
    inputTokens: int
    outputTokens: int
    cost: float | None
    latency: StatsQuantilesOut
    timeToFirstToken: StatsQuantilesOut
    buckets: list[StatsBucketOut]
    models: list[StatsUsageOut]
    agents: list[StatsUsageOut]
    threads: list[StatsThreadOut]


def _runs(statuses: dict[str, int]) -> StatsRunsOut:
    """The status counts as sent."""
    return StatsRunsOut(total=sum(statuses.values()), **statuses)


def _latency(timing: Timing) -> StatsQuantilesOut:
    """The run latency's quantiles as sent."""
    return StatsQuantilesOut(p50=timing.latency_p50, p95=timing.latency_p95)


def _ttft(timing: Timing) -> StatsQuantilesOut:
    """The time to first token's quantiles as sent."""
    return StatsQuantilesOut(p50=timing.ttft_p50, p95=timing.ttft_p95)


def _usage(name: str, usage: Usage) -> StatsUsageOut:
    """One model's or agent's figures as sent."""
    return StatsUsageOut(
        name=name,
        runs=usage.runs,
        failed=usage.failed,
        inputTokens=usage.input_tokens,
        outputTokens=usage.output_tokens,
        cost=usage.cost,
    )


def _named(rows: list[Named]) -> list[StatsUsageOut]:
    """The top models or agents as sent."""
    return [_usage(row.name, row.usage) for row in rows]


def _bucket(bucket: Bucket) -> StatsBucketOut:
    """One hour or day as sent."""
    return StatsBucketOut(
        start=bucket.start,
        runs=_runs(bucket.statuses),
        failureRate=bucket.failure_rate,
        latency=_latency(bucket.timing),
        timeToFirstToken=_ttft(bucket.timing),
        models=[_usage(name, usage) for name, usage in sorted(bucket.models.items())],
    )


def stats_out(slug: str, stats: ProjectStats) -> StatsOut:
    """The figures as the API sends them."""
    return StatsOut(
        project=slug,
        from_=stats.window.start,
        to=stats.window.end,
        unit=stats.window.unit,
        runs=_runs(stats.statuses),
        failureRate=failure_rate(stats.statuses),
        inputTokens=stats.total.input_tokens,
        outputTokens=stats.total.output_tokens,
        cost=stats.total.cost,
        latency=_latency(stats.timing),
        timeToFirstToken=_ttft(stats.timing),
        buckets=[_bucket(b) for b in stats.buckets],
        models=_named(stats.models),
        agents=_named(stats.agents),
        threads=[
            StatsThreadOut(id=t.id, title=t.title, runs=t.runs, failed=t.failed)
            for t in stats.threads
        ],
    )


@router.get("/{slug}/stats", response={200: StatsOut, **ERRORS}, by_alias=True)
def project_stats_endpoint(
    request: HttpRequest,
    slug: str,
    from_: str = Query("", alias="from", description="ISO date or time (default: to - 7 days)"),
    to: str = Query("", description="ISO date (that whole day) or time (default: now)"),
) -> StatsOut:
    """The project's runs, failures, tokens, cost, latency and time to first token over
    [from, to), per hour (a window of two days or less) or per day, with its ten busiest
    models, agents and threads: the numbers of its dashboard (docs/ui.md). Hidden threads
    count only for an admin token or a moderator's session."""
    project = get_project_for_caller(request, slug, needs=[READ])
    window = parse_window(from_, to, timezone.now(), DEFAULT_WINDOW)
    principal = caller(request)
    if principal.project_id is None:
        sees_hidden = permissions.project_access(principal.user, project).sees_hidden
    else:
        sees_hidden = TokenAccess(in_project=True, scopes=principal.scopes).sees_hidden
    return stats_out(project.slug, project_stats(project.pk, window, include_hidden=sees_hidden))
