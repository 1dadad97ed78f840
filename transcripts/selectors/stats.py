"""A project's numbers over a window of time, for its dashboard and the stats API: runs by
status, failure rate, tokens and cost by model, latency and time to first token (p50/p95),
per hour or per day, and the top models, agents and threads.

Every figure is read from the runs begun in the window (`created_at`), in one project, with
hidden threads left out for a reader who may not see them. Two queries: one pass over the
window's runs (migration 0016's index on their start), and the runs' agents from the few
messages that name one (its partial index).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db import connection, transaction

from transcripts.errors import InvalidInput
from transcripts.ids import ulid_of
from transcripts.selectors.prices import price_for
from transcripts.times import OUT_OF_RANGE, parse_iso_utc

# How a run's status counts: every status in one of four words.
STATUS_GROUPS: dict[str, str] = {
    "committed": "completed",
    "superseded": "completed",
    "failed": "failed",
    "cancelled": "stopped",
    "queued": "open",
    "streaming": "open",
}
GROUPS = ("completed", "failed", "stopped", "open")
# The longest window a caller may ask for, and the longest read hour by hour.
MAX_WINDOW = timedelta(days=366)
HOURLY_UP_TO = timedelta(days=2)
DAILY_UP_TO = timedelta(days=92)
STEPS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}
TOP = 10


@dataclass(frozen=True)
class Window:
    """A half-open span of time [start, end), in UTC."""

    start: datetime
    end: datetime

    @property
    def unit(self) -> str:
        """The width of a chart's bar: "hour" up to two days, "day" up to 92, else "week"."""
        span = self.end - self.start
        return "hour" if span <= HOURLY_UP_TO else "day" if span <= DAILY_UP_TO else "week"

    @property
    def step(self) -> timedelta:
        """The width of a bucket."""
        return STEPS[self.unit]

    def buckets(self) -> list[datetime]:
        """The start of every hour, day or week (from Monday) the window touches, oldest
        first, as PostgreSQL's date_trunc gives them."""
        first = self.start.replace(minute=0, second=0, microsecond=0)
        if self.unit != "hour":
            first = first.replace(hour=0)
        if self.unit == "week":
            first -= timedelta(days=first.weekday())
        count = -(-(self.end - first) // self.step)
        return [first + self.step * i for i in range(count)]


def make_window(start: datetime, end: datetime) -> Window:
    """A window from start to end (aware datetimes), or InvalidInput naming what is wrong."""
    if start.tzinfo is None or end.tzinfo is None:
        raise InvalidInput("from and to need a time zone", field="from")
    if end <= start:
        raise InvalidInput("to must come after from", field="to")
    if end - start > MAX_WINDOW:
        raise InvalidInput(f"a window is at most {MAX_WINDOW.days} days", field="from")
    return Window(start.astimezone(UTC), end.astimezone(UTC))


def parse_window(start: str, end: str, now: datetime, default: timedelta) -> Window:
    """The window from the texts start and end (ISO dates or times; a time without a zone is
    UTC; a date `end` includes that whole day): end defaults to now, start to end - default.
    InvalidInput names the field that is wrong."""
    until = _moment(end, "to", whole_day=True) if end else now
    try:
        since = _moment(start, "from", whole_day=False) if start else until - default
    except OverflowError:
        raise InvalidInput(f"from {OUT_OF_RANGE}", field="from") from None
    return make_window(since, until)


def _moment(text: str, name: str, *, whole_day: bool) -> datetime:
    """An aware moment of text (a date is its midnight, or the next one for whole_day)."""
    moment = parse_iso_utc(text.strip())
    if moment is None:
        raise InvalidInput(f"{name} must be an ISO date or time, e.g. 2026-03-02", field=name)
    if whole_day and len(text.strip()) == 10:
        if moment.date() == date.max:
            raise InvalidInput(f"{name} {OUT_OF_RANGE}", field=name)
        moment += timedelta(days=1)
    return moment


def cost_of(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """What the tokens cost at model's price (None: the model has no price)."""
    price = price_for(model)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


# --- the figures ---------------------------------------------------------------------------


@dataclass
class Usage:
    """Runs, failures, tokens and cost of some runs (cost None: none of them is priced)."""

    runs: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, model: str, runs: int, failed: int, tokens_in: int, tokens_out: int) -> None:
        """Count runs of model with their failures and tokens."""
        self.runs += runs
        self.failed += failed
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        cost = cost_of(model, tokens_in, tokens_out)
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


@dataclass(frozen=True)
class Timing:
    """Run latency (start to finish) and time to first token, p50 and p95, in seconds."""

    latency_p50: float | None = None
    latency_p95: float | None = None
    ttft_p50: float | None = None
    ttft_p95: float | None = None


@dataclass
class Bucket:
    """One hour or day of the window."""

    start: datetime
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0))
    models: dict[str, Usage] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)

    @property
    def runs(self) -> int:
        """Every run begun in the bucket."""
        return sum(self.statuses.values())

    @property
    def failure_rate(self) -> float | None:
        """Failed runs over finished ones (None: none finished)."""
        return failure_rate(self.statuses)


def failure_rate(statuses: dict[str, int]) -> float | None:
    """Failed over finished (completed, failed or stopped) runs; None when none finished."""
    finished = statuses["completed"] + statuses["failed"] + statuses["stopped"]
    return statuses["failed"] / finished if finished else None


@dataclass(frozen=True)
class Named:
    """A model or an agent with its runs, failures, tokens and cost."""

    name: str
    usage: Usage


@dataclass(frozen=True)
class BusyThread:
    """A thread with the runs begun in it during the window."""

    id: str
    title: str
    runs: int
    failed: int


@dataclass(frozen=True)
class ProjectStats:
    """Everything the dashboard shows for one window."""

    window: Window
    statuses: dict[str, int]
    total: Usage
    timing: Timing
    buckets: list[Bucket]
    models: list[Named]
    agents: list[Named]
    threads: list[BusyThread]

    @property
    def failure_rate(self) -> float | None:
        """Failed over finished runs in the whole window."""
        return failure_rate(self.statuses)


# --- the queries ---------------------------------------------------------------------------

_TOKENS = """greatest(0, CASE
    WHEN jsonb_typeof(r.usage -> '{camel}') = 'number' THEN (r.usage ->> '{camel}')::numeric
    WHEN jsonb_typeof(r.usage -> '{snake}') = 'number' THEN (r.usage ->> '{snake}')::numeric
    ELSE 0 END)"""
_IN = _TOKENS.format(camel="inputTokens", snake="input_tokens")
_OUT = _TOKENS.format(camel="outputTokens", snake="output_tokens")
_START = "coalesce(r.started_at, r.created_at)"
_IN_WINDOW = """t.project_id = %(project)s AND r.created_at >= %(start)s
    AND r.created_at < %(end)s AND (%(hidden)s OR NOT t.hidden)"""
_PERCENTILES = """percentile_cont(0.5) WITHIN GROUP (ORDER BY {x}),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY {x})"""

# One pass over the window's runs (each read once, with what every figure needs), three
# answers in one result: "m" rows by bucket, status and model; "t" rows of timings by bucket
# (and the window's, bucket null); "h" rows of the busiest threads. Columns: kind, bucket,
# status (or title), model (or thread id), runs, failed or tokens in, tokens out, 4 timings.
_FIGURES = f"""WITH w AS MATERIALIZED (
    SELECT r.thread_id, r.status, r.model,
           date_trunc(%(unit)s, r.created_at AT TIME ZONE 'UTC') AS bucket,
           {_IN} AS tokens_in, {_OUT} AS tokens_out,
           greatest(0, extract(epoch FROM r.finished_at - {_START})) AS latency,
           greatest(0, extract(epoch FROM r.first_event_at - {_START})) AS ttft
    FROM transcripts_run r JOIN transcripts_thread t ON t.id = r.thread_id
    WHERE {_IN_WINDOW}),
busy AS (
    SELECT thread_id, count(*) AS runs, count(*) FILTER (WHERE status = 'failed') AS failed
    FROM w GROUP BY thread_id ORDER BY 2 DESC, 1 DESC LIMIT %(top)s)
SELECT 'm', bucket, status, model, count(*), sum(tokens_in), sum(tokens_out),
       NULL::float8, NULL::float8, NULL::float8, NULL::float8
FROM w GROUP BY bucket, status, model
UNION ALL
SELECT 't', bucket, NULL, NULL, NULL, NULL, NULL,
       {_PERCENTILES.format(x="latency")}, {_PERCENTILES.format(x="ttft")}
FROM w GROUP BY GROUPING SETS ((bucket), ())
UNION ALL
SELECT 'h', NULL, t.title, b.thread_id::text, b.runs, b.failed, NULL,
       NULL, NULL, NULL, NULL
FROM busy b JOIN transcripts_thread t ON t.id = b.thread_id"""

# An agent is named on the messages it wrote (metadata.agentId, a partial index of the few
# messages that carry one): a run counts once per agent.
_AGENTS = f"""SELECT a.agent, a.model, count(*), count(*) FILTER (WHERE a.status = 'failed'),
       sum(a.tokens_in), sum(a.tokens_out)
FROM (SELECT DISTINCT ON (r.id, m.metadata ->> 'agentId') m.metadata ->> 'agentId' AS agent,
             r.model, r.status, {_IN} AS tokens_in, {_OUT} AS tokens_out
      FROM transcripts_message m JOIN transcripts_run r ON r.id = m.run_id
           JOIN transcripts_thread t ON t.id = r.thread_id
      WHERE m.metadata ? 'agentId' AND m.metadata ->> 'agentId' <> '' AND {_IN_WINDOW}) a
GROUP BY 1, 2"""

# The sorts of the percentiles and groups stay in memory up to this (PostgreSQL's default,
# 4MB, spills a window of 100,000 runs to disk); set for the one transaction only.
_WORK_MEM = "SET LOCAL work_mem = '64MB'"

_Params = dict[str, int | str | bool | datetime]


def _rows(sql: str, params: _Params) -> Sequence[tuple[object, ...]]:
    """The rows of one query, its sorts given _WORK_MEM."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_WORK_MEM)
        cursor.execute(sql, params)
        rows: Sequence[tuple[object, ...]] = cursor.fetchall()
        return rows


def _number(value: object) -> int:
    """A count or sum from the database as an int."""
    return int(value) if isinstance(value, int | float | Decimal) else 0


def _seconds(value: object) -> float | None:
    """A percentile in seconds (None: no run had it)."""
    return float(value) if isinstance(value, int | float | Decimal) else None


def _utc(value: object) -> datetime:
    """A bucket's start (a UTC wall time from date_trunc) as an aware datetime."""
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC)


@dataclass
class _Tally:
    """The figures as the rows of _FIGURES add up."""

    window: Window
    buckets: dict[datetime, Bucket]
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0))
    total: Usage = field(default_factory=Usage)
    models: dict[str, Usage] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)
    threads: list[BusyThread] = field(default_factory=list)

    def add(self, row: tuple[object, ...]) -> None:
        """Count one row of _FIGURES."""
        kind, when, text, name, runs, second, third, *quantiles = row
        if kind == "m":
            bucket, group, model, count = (
                self.buckets[_utc(when)],
                STATUS_GROUPS[str(text)],
                str(name),
                _number(runs),
            )
            figures = (count if group == "failed" else 0, _number(second), _number(third))
            bucket.statuses[group] += count
            self.statuses[group] += count
            for usage in (
                bucket.models.setdefault(model, Usage()),
                self.models.setdefault(model, Usage()),
                self.total,
            ):
                usage.add(model, count, *figures)
        elif kind == "t":
            timing = Timing(*(_seconds(q) for q in quantiles))
            if when is None:
                self.timing = timing
            else:
                self.buckets[_utc(when)].timing = timing
        else:
            self.threads.append(
                BusyThread(ulid_of(name), str(text), _number(runs), _number(second))
            )


def project_stats(project_id: int, window: Window, *, include_hidden: bool) -> ProjectStats:
    """The project's figures over window (hidden threads counted only with include_hidden)."""
    params: _Params = {
        "project": project_id,
        "start": window.start,
        "end": window.end,
        "hidden": include_hidden,
        "unit": window.unit,
        "top": TOP,
    }
    tally = _Tally(window, {start: Bucket(start) for start in window.buckets()})
    for row in _rows(_FIGURES, params):
        tally.add(row)
    return ProjectStats(
        window=window,
        statuses=tally.statuses,
        total=tally.total,
        timing=tally.timing,
        buckets=list(tally.buckets.values()),
        models=_top(tally.models),
        agents=_agents(params),
        threads=sorted(tally.threads, key=lambda t: (t.runs, t.id), reverse=True),
    )


def _top(usages: dict[str, Usage]) -> list[Named]:
    """The TOP busiest of usages, most runs first (then by name)."""
    ranked = sorted(usages.items(), key=lambda item: (-item[1].runs, item[0]))
    return [Named(name, usage) for name, usage in ranked[:TOP]]


def _agents(params: _Params) -> list[Named]:
    """The agents of the window's runs, with their runs' figures (cost at each run's model)."""
    agents: dict[str, Usage] = {}
    for agent, model, runs, failed, tokens_in, tokens_out in _rows(_AGENTS, params):
        agents.setdefault(str(agent), Usage()).add(
            str(model), _number(runs), _number(failed), _number(tokens_in), _number(tokens_out)
        )
    return _top(agents)
