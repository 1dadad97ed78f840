"""A project's numbers over a window of time, for its dashboard and the stats API: runs by
status, failure rate, tokens and cost by model, latency and time to first token (p50/p95),
per hour or per day, and the top models, agents and threads.

Every figure counts the runs begun in the window (`created_at`), in one project, with hidden
threads left out for a reader who may not see them. Counts, tokens and cost come from migration
0020's rollups (whole days and hours) and the runs of the window's partial edge hours: exact,
and O(hours in the window) rows. Percentiles come from the rollups' log-scale histograms:
within 4.4% of the exact value (1 ms below 1 ms). The busiest threads read the thread-day
rollup (a window over 7 days takes candidates by their run count first, _busiest); the agents,
the few messages that name one (migration 0016's partial index).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

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


# --- where the figures come from -----------------------------------------------------------
#
# Migration 0020's triggers keep two rollups of the runs: per project, hour or day (of the
# run's start), model and hidden flag (runs per status group, tokens, histograms of latency
# and time to first token), and per thread and day (runs, failures). A window reads the rollup
# rows of its whole days and hours and, exactly, the runs of the partial hours at its edges:
# O(days + hours) rows, not O(runs), and the same totals as counting every run.

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The histograms' 256 buckets (as migration 0020 counts them): 0 holds what took under 1 ms,
# bucket i >= 1 [2^((i-1)/8), 2^(i/8)) ms, the last one (255) everything longer. A percentile
# is read at the geometric middle of its bucket(s), so it is within 2^(1/16) - 1 (4.4%) of the
# exact one from 1 ms up to the last bucket (40 days), and within 1 ms below.
PER_OCTAVE = 8

Span = tuple[datetime, datetime]


def _floor(moment: datetime, step: timedelta) -> datetime:
    """moment rounded down to a whole step (an hour or a UTC day)."""
    return moment - (moment - _EPOCH) % step


def _ceil(moment: datetime, step: timedelta) -> datetime:
    """moment rounded up to a whole step."""
    floor = _floor(moment, step)
    return floor if floor == moment else floor + step


def _split(span: Span, step: timedelta) -> tuple[Span | None, list[Span]]:
    """The whole steps inside span (None: not one), and the parts of span around them."""
    start, end = span
    low, high = _ceil(start, step), _floor(end, step)
    if low >= high:
        return None, [span]
    return (low, high), [s for s in ((start, low), (high, end)) if s[0] < s[1]]


@dataclass(frozen=True)
class Sources:
    """Where a window's runs are counted: rollup rows of whole days and of whole hours, and
    the runs themselves in the partial hours at its edges."""

    days: list[Span]
    hours: list[Span]
    runs: list[Span]


def sources(window: Window, *, days: bool) -> Sources:
    """The window split into whole days (when days: a bar of a day or wider holds them), the
    whole hours left, and the partial hours read from the runs."""
    hours, runs = _split((window.start, window.end), HOUR)
    if hours is None:
        return Sources([], [], runs)
    whole, parts = _split(hours, DAY) if days else (None, [hours])
    return Sources([whole] if whole else [], parts, runs)


def bucket_seconds(index: int) -> float:
    """The duration a histogram bucket stands for: its geometric middle (0 for bucket 0)."""
    return 0.0 if index == 0 else 2 ** ((index - 0.5) / PER_OCTAVE) / 1000


def percentile(counts: dict[int, int], q: float) -> float | None:
    """The q-quantile of a histogram (bucket -> runs), interpolated between the two nearest
    ranks as percentile_cont is, each read at its bucket's middle; None when it is empty."""
    ranked = sorted((i, n) for i, n in counts.items() if n > 0)
    total = sum(n for _, n in ranked)
    if not total:
        return None
    position = q * (total - 1)
    low, high = _nth(ranked, int(position)), _nth(ranked, math.ceil(position))
    return low + (position - int(position)) * (high - low)


def _nth(ranked: list[tuple[int, int]], rank: int) -> float:
    """The duration of the rank-th (from 0) run of a sorted histogram."""
    for index, count in ranked:
        if rank < count:
            return bucket_seconds(index)
        rank -= count
    return bucket_seconds(ranked[-1][0])


# --- the queries ---------------------------------------------------------------------------

_IN = "transcripts_run_tokens(r.usage, 'inputTokens', 'input_tokens')"
_OUT = "transcripts_run_tokens(r.usage, 'outputTokens', 'output_tokens')"
_START = "coalesce(r.started_at, r.created_at)"
_PROJECT = "t.project_id = %(project)s AND (%(hidden)s OR NOT t.hidden)"
_IN_WINDOW = f"{_PROJECT} AND r.created_at >= %(start)s AND r.created_at < %(end)s"
_RUNS = "transcripts_run r JOIN transcripts_thread t ON t.id = r.thread_id"
_ROLLUP_ROWS = """u.project_id = %(project)s AND (%(hidden)s OR NOT u.hidden)
    AND ((u.grain = 'd' AND {days}) OR (u.grain = 'h' AND {hours}))"""
_COUNTS = ", ".join(
    f"count(*) FILTER (WHERE transcripts_run_group(r.status) = '{g}')" for g in GROUPS
)

# Runs, tokens by bucket and model: the rollup's whole days and hours, then the edges' runs.
_USAGE = f"""SELECT date_trunc(%(unit)s, u.start, 'UTC'), u.model, sum(u.completed),
       sum(u.failed), sum(u.stopped), sum(u.open), sum(u.tokens_in), sum(u.tokens_out)
FROM transcripts_runrollup u WHERE {_ROLLUP_ROWS}
GROUP BY 1, 2
UNION ALL
SELECT date_trunc(%(unit)s, r.created_at, 'UTC'), r.model, {_COUNTS}, sum({_IN}), sum({_OUT})
FROM {_RUNS} WHERE {_PROJECT} AND {{runs}}
GROUP BY 1, 2"""

# The histograms by bucket: (bucket, "latency" or "ttft", histogram bucket, runs).
_HISTOGRAMS = f"""SELECT date_trunc(%(unit)s, u.start, 'UTC'), k.kind, h.i - 1, sum(h.n)
FROM transcripts_runrollup u
    CROSS JOIN LATERAL (VALUES ('latency', u.latency), ('ttft', u.ttft)) k(kind, hist)
    CROSS JOIN LATERAL unnest(k.hist) WITH ORDINALITY h(n, i)
WHERE h.n <> 0 AND {_ROLLUP_ROWS}
GROUP BY 1, 2, 3
UNION ALL
SELECT date_trunc(%(unit)s, r.created_at, 'UTC'), k.kind, k.i, count(*)
FROM {_RUNS} CROSS JOIN LATERAL (VALUES
    ('latency', transcripts_hist_index({_START}, r.finished_at)),
    ('ttft', transcripts_hist_index({_START}, r.first_event_at))) k(kind, i)
WHERE k.i IS NOT NULL AND {_PROJECT} AND {{runs}}
GROUP BY 1, 2, 3"""

# The busiest threads: the thread days' rollup of whole days, the edges' runs.
_BUSY = f"""WITH busy AS (
    SELECT x.thread_id, sum(x.runs) AS runs, sum(x.failed) AS failed
    FROM (SELECT d.thread_id, d.runs, d.failed FROM transcripts_threadday d
          WHERE d.project_id = %(project)s AND (%(hidden)s OR NOT d.hidden) AND {{days}}
          UNION ALL
          SELECT r.thread_id, 1, (r.status = 'failed')::int FROM {_RUNS}
          WHERE {_PROJECT} AND {{runs}}) x
    GROUP BY 1 HAVING sum(x.runs) > 0 ORDER BY 2 DESC, 1 DESC LIMIT %(top)s)
SELECT b.thread_id::text, t.title, b.runs, b.failed
FROM busy b JOIN transcripts_thread t ON t.id = b.thread_id"""

# The same ranking for long windows, pruned: threads taken by their run count (all time, on
# the thread row: an upper bound of their runs in any window), most first, a batch at a time
# below a (run count, id) bound, with their runs in the window; the ranking is settled once the
# tenth best beats the bound (see _busiest).
_CANDIDATES = """SELECT t.id::text, t.title, t.run_count, w.runs, w.failed
FROM transcripts_thread t CROSS JOIN LATERAL (
    SELECT coalesce(sum(x.runs), 0) AS runs, coalesce(sum(x.failed), 0) AS failed
    FROM (SELECT d.runs, d.failed FROM transcripts_threadday d
          WHERE d.thread_id = t.id AND {days}
          UNION ALL
          SELECT 1, (r.status = 'failed')::int FROM transcripts_run r
          WHERE r.thread_id = t.id AND {runs}) x) w
WHERE t.project_id = %(project)s AND (%(hidden)s OR NOT t.hidden)
    AND (t.run_count, t.id) < (%(below_runs)s, %(below_id)s::uuid)
ORDER BY t.run_count DESC, t.id DESC LIMIT %(batch)s"""
# Windows longer than this rank pruned; at most this many batches of candidates before the
# plain ranking (every thread active in the window) settles it.
PRUNED_AFTER = timedelta(days=7)
BATCH = 200
BATCHES = 10
_ABOVE_ALL = (2**62, "ffffffff-ffff-ffff-ffff-ffffffffffff")

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

# The sorts of the groups stay in memory up to this; set for the one transaction only.
_WORK_MEM = "SET LOCAL work_mem = '64MB'"

_Params = dict[str, int | str | bool | datetime]


def _spans(column: str, spans: list[Span], name: str, params: _Params) -> str:
    """SQL: column falls in one of spans (their bounds added to params under name)."""
    terms = []
    for n, (low, high) in enumerate(spans):
        params[f"{name}{n}_low"], params[f"{name}{n}_high"] = low, high
        terms.append(f"({column} >= %({name}{n}_low)s AND {column} < %({name}{n}_high)s)")
    return f"({' OR '.join(terms)})" if terms else "false"


def _number(value: object) -> int:
    """A count or sum from the database as an int."""
    return int(value) if isinstance(value, int | float | Decimal) else 0


def _utc(value: object) -> datetime:
    """A bucket's start from date_trunc as an aware UTC datetime."""
    assert isinstance(value, datetime)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class _Tally:
    """The figures as the rows of the queries add up."""

    buckets: dict[datetime, Bucket]
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0))
    total: Usage = field(default_factory=Usage)
    models: dict[str, Usage] = field(default_factory=dict)
    histograms: dict[tuple[datetime | None, str], dict[int, int]] = field(default_factory=dict)

    def add_usage(self, row: Sequence[object]) -> None:
        """Count one row of _USAGE: a bucket's runs of one model."""
        when, name, *counts, tokens_in, tokens_out = row
        bucket, model = self.buckets[_utc(when)], str(name)
        by_group = dict(zip(GROUPS, (_number(c) for c in counts), strict=True))
        for group, count in by_group.items():
            bucket.statuses[group] += count
            self.statuses[group] += count
        figures = (sum(by_group.values()), by_group["failed"])
        tokens = (_number(tokens_in), _number(tokens_out))
        for usage in (
            bucket.models.setdefault(model, Usage()),
            self.models.setdefault(model, Usage()),
            self.total,
        ):
            usage.add(model, *figures, *tokens)

    def add_histogram(self, row: Sequence[object]) -> None:
        """Count one row of _HISTOGRAMS in its bucket's histogram and the window's."""
        when, kind, index, runs = row
        for key in ((_utc(when), str(kind)), (None, str(kind))):
            counts = self.histograms.setdefault(key, {})
            counts[_number(index)] = counts.get(_number(index), 0) + _number(runs)

    def timing(self, when: datetime | None) -> Timing:
        """p50 and p95 of a bucket (None: of the window)."""
        latency = self.histograms.get((when, "latency"), {})
        ttft = self.histograms.get((when, "ttft"), {})
        return Timing(
            percentile(latency, 0.5),
            percentile(latency, 0.95),
            percentile(ttft, 0.5),
            percentile(ttft, 0.95),
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
    where = sources(window, days=window.unit != "hour")
    spans = {
        "days": _spans("u.start", where.days, "day", params),
        "hours": _spans("u.start", where.hours, "hour", params),
        "runs": _spans("r.created_at", where.runs, "edge", params),
    }
    whole_days, day_edges = _split((window.start, window.end), DAY)
    busy = {
        "days": _spans("d.day", [whole_days] if whole_days else [], "busy", params),
        "runs": _spans("r.created_at", day_edges, "busy_edge", params),
    }
    tally = _Tally({start: Bucket(start) for start in window.buckets()})
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_WORK_MEM)
        cursor.execute(_USAGE.format(**spans), params)
        for row in cursor.fetchall():
            tally.add_usage(row)
        cursor.execute(_HISTOGRAMS.format(**spans), params)
        for row in cursor.fetchall():
            tally.add_histogram(row)
        threads = _busiest(cursor, window, busy, params)
        cursor.execute(_AGENTS, params)
        agents = _agents(cursor.fetchall())
    for bucket in tally.buckets.values():
        bucket.timing = tally.timing(bucket.start)
    return ProjectStats(
        window=window,
        statuses=tally.statuses,
        total=tally.total,
        timing=tally.timing(None),
        buckets=list(tally.buckets.values()),
        models=_top(tally.models),
        agents=agents,
        threads=threads,
    )


_Ranked = tuple[int, str, str, int]  # runs in the window, thread id (uuid text), title, failed


def _busiest(
    cursor: CursorWrapper, window: Window, spans: dict[str, str], params: _Params
) -> list[BusyThread]:
    """The TOP threads with the most runs in the window (then the newest id). A long window
    takes candidates by their run count (a bound of their runs in the window) until no thread
    left can enter the ranking; if that takes more than BATCHES batches, the plain ranking."""
    ranked: list[_Ranked] = []
    below = _ABOVE_ALL
    if window.end - window.start > PRUNED_AFTER:
        for _ in range(BATCHES):
            cursor.execute(
                _CANDIDATES.format(**spans),
                {**params, "below_runs": below[0], "below_id": below[1], "batch": BATCH},
            )
            rows = cursor.fetchall()
            found = [(_number(r), str(i), str(t), _number(f)) for i, t, _, r, f in rows if r]
            ranked = sorted(ranked + found, reverse=True)[:TOP]
            if len(rows) < BATCH:
                return _busy_threads(ranked)
            below = (_number(rows[-1][2]), str(rows[-1][0]))
            if len(ranked) == TOP and below <= ranked[-1][:2]:
                return _busy_threads(ranked)
    cursor.execute(_BUSY.format(**spans), params)
    ranked = [(_number(r), str(i), str(t), _number(f)) for i, t, r, f in cursor.fetchall()]
    return _busy_threads(sorted(ranked, reverse=True))


def _busy_threads(ranked: list[_Ranked]) -> list[BusyThread]:
    """The ranked threads as the dashboard names them."""
    return [BusyThread(ulid_of(i), title, runs, failed) for runs, i, title, failed in ranked]


def _top(usages: dict[str, Usage]) -> list[Named]:
    """The TOP busiest of usages, most runs first (then by name)."""
    ranked = sorted(usages.items(), key=lambda item: (-item[1].runs, item[0]))
    return [Named(name, usage) for name, usage in ranked[:TOP]]


def _agents(rows: Sequence[Sequence[object]]) -> list[Named]:
    """The agents of the window's runs, with their runs' figures (cost at each run's model)."""
    agents: dict[str, Usage] = {}
    for agent, model, runs, failed, tokens_in, tokens_out in rows:
        agents.setdefault(str(agent), Usage()).add(
            str(model), _number(runs), _number(failed), _number(tokens_in), _number(tokens_out)
        )
    return _top(agents)
