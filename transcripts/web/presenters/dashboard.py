"""What the project dashboard shows: headline figures, bar charts drawn as SVG rectangles
(coordinates in a 0..100 box the CSS stretches to the page's width; colours are CSS classes,
so dark mode follows), each chart's numbers as a table, and the links to the thread list
filtered to what a chart shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from transcripts.selectors.score_stats import ScoreSeries
from transcripts.selectors.stats import GROUPS, Bucket, Named, ProjectStats, Usage, Window
from transcripts.web.presenters.trace import cost_label

NO_VALUE = "—"
# The series a model chart draws: the busiest models, the rest summed as "other".
MODEL_SERIES = 5
TONES = ("a", "b", "c", "d", "e")
STATUS_LABELS = {
    "completed": "Completed",
    "failed": "Failed",
    "stopped": "Stopped",
    "open": "Open",
}


@dataclass(frozen=True)
class Rect:
    """One bar (or one part of a stacked bar) in the chart's 0..100 box."""

    x: float
    y: float
    width: float
    height: float
    tone: str
    title: str


@dataclass(frozen=True)
class Series:
    """A legend entry: a name, its colour class, and where its threads are listed."""

    name: str
    tone: str
    href: str = ""


@dataclass(frozen=True)
class Cell:
    """A table cell: its text and, for a row's first cell, where its threads are listed."""

    text: str
    href: str = ""


@dataclass
class Chart:
    """A bar chart with its legend, scale, axis labels and the numbers as a table."""

    slug: str
    title: str
    summary: str
    link: str
    link_label: str
    headers: list[str]
    rows: list[list[Cell]]
    rects: list[Rect] = field(default_factory=list)
    legend: list[Series] = field(default_factory=list)
    top: str = ""
    first: str = ""
    last: str = ""

    def rects_html(self) -> SafeString:
        """The bars as SVG rectangles, each with its value as a tooltip (built here, not in the
        template: a window of 92 days draws hundreds of them)."""
        return mark_safe(  # every value is a number or escaped
            "".join(
                f'<rect class="{escape(r.tone)}" x="{r.x:.3f}" y="{r.y:.3f}"'
                f' width="{r.width:.3f}" height="{r.height:.3f}"><title>{escape(r.title)}</title>'
                "</rect>"
                for r in self.rects
            )
        )

    def rows_html(self) -> SafeString:
        """The table's body rows: the first cell a row header (a link when it has one)."""
        return mark_safe(  # every text is escaped
            "".join(
                f"<tr>{_head(row[0])}{''.join(_cell(c) for c in row[1:])}</tr>" for row in self.rows
            )
        )


def _head(cell: Cell) -> str:
    """A row header cell."""
    text = escape(cell.text)
    inner = f'<a href="{escape(cell.href)}">{text}</a>' if cell.href else text
    return f'<th scope="row">{inner}</th>'


def _cell(cell: Cell) -> str:
    """A data cell."""
    return f"<td>{escape(cell.text)}</td>"


@dataclass(frozen=True)
class Figure:
    """A headline number with its label."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class TopRow:
    """A row of a top list: a name linking to its threads, its share of the busiest, figures."""

    name: str
    href: str
    share: float
    cells: list[str]


@dataclass(frozen=True)
class TopList:
    """The busiest models, agents or threads."""

    slug: str
    title: str
    headers: list[str]
    rows: list[TopRow]
    empty: str


@dataclass(frozen=True)
class Dashboard:
    """The whole page below the window form."""

    window_label: str
    figures: list[Figure]
    charts: list[Chart]
    tops: list[TopList]
    threads_href: str


# --- words and numbers ---------------------------------------------------------------------


def seconds_label(seconds: float | None) -> str:
    """A duration for people: 850 ms, 2.4 s, 3 min 5 s; unknown is a dash."""
    if seconds is None:
        return NO_VALUE
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def percent_label(rate: float | None) -> str:
    """A rate as a percentage; none is a dash."""
    return NO_VALUE if rate is None else f"{rate * 100:.1f}%"


def count_label(number: int) -> str:
    """A count with thousands separators."""
    return f"{number:,}"


def bucket_label(start: datetime, unit: str, *, short: bool) -> str:
    """A bucket's name: "Mar 2", "Mar 2 14:00" (short: "14:00" for an hour) or "week of
    Mar 2"."""
    if unit == "week":
        return start.strftime("week of %b %-d")
    if unit == "hour":
        return start.strftime("%H:%M") if short else start.strftime("%b %-d %H:%M")
    return start.strftime("%b %-d")


# --- links ---------------------------------------------------------------------------------


@cache
def _thread_list() -> str:
    """The thread list's path (reversed once: a year's tables link hundreds of cells)."""
    return reverse("thread_list")


def threads_link(project: str, window: Window, **filters: str) -> str:
    """The thread list of the project (its slug) with threads active in the window's days,
    narrowed by filters."""
    last = window.end - timedelta(microseconds=1)
    params = {
        "project": project,
        "since": window.start.date().isoformat(),
        "until": last.date().isoformat(),
    }
    return f"{_thread_list()}?{urlencode({**params, **filters})}"


def _bucket_window(bucket: Bucket, window: Window) -> Window:
    """The part of window one bucket covers."""
    # Compared before adding: a week's end may lie past the last year a datetime holds.
    end = window.end if window.end - bucket.start <= window.step else bucket.start + window.step
    return Window(max(bucket.start, window.start), end)


# --- charts --------------------------------------------------------------------------------

GAP = 0.2  # of a slot, left empty between bars


def stacked_rects(
    columns: Sequence[Sequence[tuple[float, str, str]]], *, scale: float
) -> list[Rect]:
    """The rectangles of stacked bars: one column per slot, each part (value, tone, title)
    stacked from the bottom; scale is the value at the top of the box."""
    rects: list[Rect] = []
    slot = 100 / max(len(columns), 1)
    for i, parts in enumerate(columns):
        bottom = 100.0
        for value, tone, title in parts:
            if value <= 0 or scale <= 0:
                continue
            height = value / scale * 100
            bottom -= height
            x = i * slot + slot * GAP / 2
            rects.append(
                Rect(
                    round(x, 3),
                    round(bottom, 3),
                    round(slot * (1 - GAP), 3),
                    round(height, 3),
                    tone,
                    title,
                )
            )
    return rects


def grouped_rects(
    columns: Sequence[Sequence[tuple[float | None, str, str]]], *, scale: float
) -> list[Rect]:
    """The rectangles of bars side by side within each slot (value None: no bar)."""
    rects: list[Rect] = []
    slot = 100 / max(len(columns), 1)
    for i, parts in enumerate(columns):
        width = slot * (1 - GAP) / max(len(parts), 1)
        for j, (value, tone, title) in enumerate(parts):
            if value is None or value <= 0 or scale <= 0:
                continue
            height = value / scale * 100
            x = i * slot + slot * GAP / 2 + j * width
            rects.append(
                Rect(
                    round(x, 3),
                    round(100 - height, 3),
                    round(width, 3),
                    round(height, 3),
                    tone,
                    title,
                )
            )
    return rects


def _axis(chart: Chart, buckets: list[Bucket], unit: str, top: str) -> Chart:
    """chart with its scale and first and last bucket labels."""
    chart.top = top
    if buckets:
        chart.first = bucket_label(buckets[0].start, unit, short=False)
        chart.last = bucket_label(buckets[-1].start, unit, short=False)
    return chart


def _row_head(project: str, bucket: Bucket, window: Window, **filters: str) -> Cell:
    """A table row's first cell: the bucket, linking to its threads."""
    label = bucket_label(bucket.start, window.unit, short=False)
    return Cell(label, threads_link(project, _bucket_window(bucket, window), **filters))


def runs_chart(stats: ProjectStats, project: str) -> Chart:
    """Runs per bucket, stacked by status."""
    window, buckets = stats.window, stats.buckets
    tones = {g: f"status-{g}" for g in GROUPS}
    columns = [
        [(b.statuses[g], tones[g], f"{STATUS_LABELS[g]}: {b.statuses[g]}") for g in GROUPS]
        for b in buckets
    ]
    scale = max((b.runs for b in buckets), default=0)
    chart = Chart(
        slug="runs",
        title="Runs by status",
        summary=f"{count_label(sum(stats.statuses.values()))} runs",
        link=threads_link(project, window),
        link_label="Threads active in this window",
        headers=["When", *STATUS_LABELS.values(), "Total"],
        rows=[
            [
                _row_head(project, b, window),
                *(Cell(count_label(b.statuses[g])) for g in GROUPS),
                Cell(count_label(b.runs)),
            ]
            for b in buckets
        ],
        rects=stacked_rects(columns, scale=scale),
        legend=[Series(STATUS_LABELS[g], tones[g]) for g in GROUPS],
    )
    return _axis(chart, buckets, window.unit, count_label(scale))


def failure_chart(stats: ProjectStats, project: str) -> Chart:
    """The share of finished runs that failed, per bucket."""
    window, buckets = stats.window, stats.buckets
    columns = [
        [(b.failure_rate, "status-failed", f"Failed: {percent_label(b.failure_rate)}")]
        for b in buckets
    ]
    scale = max((b.failure_rate or 0 for b in buckets), default=0)
    chart = Chart(
        slug="failures",
        title="Failure rate",
        summary=f"{percent_label(stats.failure_rate)} of finished runs failed",
        link=threads_link(project, window, failed="on"),
        link_label="Threads with failed runs",
        headers=["When", "Failed", "Finished", "Rate"],
        rows=[
            [
                _row_head(project, b, window, failed="on"),
                Cell(count_label(b.statuses["failed"])),
                Cell(count_label(b.runs - b.statuses["open"])),
                Cell(percent_label(b.failure_rate)),
            ]
            for b in buckets
        ],
        rects=grouped_rects(columns, scale=scale),
        legend=[Series("Failed", "status-failed")],
    )
    return _axis(chart, buckets, window.unit, percent_label(scale) if scale else "0%")


def _model_series(stats: ProjectStats) -> tuple[list[str], bool]:
    """The models a chart draws one by one, and whether others are summed as "other"."""
    names = [m.name for m in stats.models[:MODEL_SERIES]]
    every = {name for b in stats.buckets for name in b.models}
    return names, bool(every - set(names))


def _model_value(bucket: Bucket, names: list[str], value: Callable[[Usage], float]) -> list[float]:
    """value for each named model in bucket, then for the other models summed."""
    others = sum(value(u) for name, u in bucket.models.items() if name not in names)
    return [value(bucket.models[n]) if n in bucket.models else 0 for n in names] + [others]


def model_name(name: str) -> str:
    """A model as shown ("(no model)" for runs that named none)."""
    return name or "(no model)"


def model_chart(
    stats: ProjectStats,
    project: str,
    *,
    slug: str,
    title: str,
    value: Callable[[Usage], float],
    label: Callable[[float], str],
    summary: str,
) -> Chart:
    """Per bucket, value of each busy model's runs, stacked."""
    window, buckets = stats.window, stats.buckets
    names, other = _model_series(stats)
    tones = [f"series-{t}" for t in TONES[: len(names)]] + ["series-other"]
    shown = [model_name(n) for n in names] + (["Other models"] if other else [])
    values = [_model_value(b, names, value) for b in buckets]
    names_of = [*shown, "Other models"]
    columns = [
        [(v, tones[i], f"{names_of[i]}: {label(v)}") for i, v in enumerate(vs)] for vs in values
    ]
    scale = max((sum(vs) for vs in values), default=0)
    legend = [
        Series(model_name(n), tones[i], threads_link(project, window, who=n) if n else "")
        for i, n in enumerate(names)
    ]
    if other:
        legend.append(Series("Other models", "series-other"))
    chart = Chart(
        slug=slug,
        title=title,
        summary=summary,
        link=threads_link(project, window),
        link_label="Threads active in this window",
        headers=["When", *shown],
        rows=[
            [_row_head(project, b, window), *(Cell(label(v)) for v in vs[: len(shown)])]
            for b, vs in zip(buckets, values, strict=True)
        ],
        rects=stacked_rects(columns, scale=scale),
        legend=legend,
    )
    return _axis(chart, buckets, window.unit, label(scale))


def _tokens(usage: Usage) -> float:
    return usage.input_tokens + usage.output_tokens


def _cost(usage: Usage) -> float:
    return usage.cost or 0.0


def timing_chart(
    stats: ProjectStats, project: str, *, slug: str, title: str, latency: bool
) -> Chart:
    """p50 and p95 per bucket, side by side: run latency, or time to first token."""
    window, buckets = stats.window, stats.buckets

    def pair(b: Bucket) -> tuple[float | None, float | None]:
        t = b.timing
        return (t.latency_p50, t.latency_p95) if latency else (t.ttft_p50, t.ttft_p95)

    columns = [
        [
            (p50, "series-a", f"p50: {seconds_label(p50)}"),
            (p95, "series-c", f"p95: {seconds_label(p95)}"),
        ]
        for p50, p95 in map(pair, buckets)
    ]
    scale = max((v or 0 for b in buckets for v in pair(b)), default=0)
    whole = stats.timing
    p50, p95 = (
        (whole.latency_p50, whole.latency_p95) if latency else (whole.ttft_p50, whole.ttft_p95)
    )
    chart = Chart(
        slug=slug,
        title=title,
        summary=f"p50 {seconds_label(p50)} · p95 {seconds_label(p95)}",
        link=threads_link(project, window),
        link_label="Threads active in this window",
        headers=["When", "p50", "p95"],
        rows=[
            [_row_head(project, b, window), *(Cell(seconds_label(v)) for v in pair(b))]
            for b in buckets
        ],
        rects=grouped_rects(columns, scale=scale),
        legend=[Series("p50", "series-a"), Series("p95", "series-c")],
    )
    return _axis(chart, buckets, window.unit, seconds_label(scale) if scale else "0 s")


# --- top lists -----------------------------------------------------------------------------


def _usage_cells(usage: Usage) -> list[str]:
    """A model's or agent's figures as the top lists show them."""
    return [
        count_label(usage.runs),
        count_label(usage.failed),
        f"{count_label(usage.input_tokens)} / {count_label(usage.output_tokens)}",
        cost_label(usage.cost),
    ]


def _top(
    project: str, slug: str, title: str, rows: list[Named], window: Window, empty: str
) -> TopList:
    """The busiest models or agents, each linking to the threads naming it."""
    busiest = max((r.usage.runs for r in rows), default=0) or 1
    return TopList(
        slug=slug,
        title=title,
        headers=["Runs", "Failed", "Tokens in / out", "Cost"],
        rows=[
            TopRow(
                name=model_name(r.name),
                href=threads_link(project, window, who=r.name) if r.name else "",
                share=round(r.usage.runs / busiest * 100, 3),
                cells=_usage_cells(r.usage),
            )
            for r in rows
        ],
        empty=empty,
    )


def _busiest_threads(stats: ProjectStats) -> TopList:
    """The threads with the most runs in the window, each linking to its conversation."""
    busiest = max((t.runs for t in stats.threads), default=0) or 1
    return TopList(
        slug="threads",
        title="Busiest threads",
        headers=["Runs", "Failed"],
        rows=[
            TopRow(
                name=t.title or f"Thread {t.id}",
                href=reverse("conversation", args=[t.id]),
                share=round(t.runs / busiest * 100, 3),
                cells=[count_label(t.runs), count_label(t.failed)],
            )
            for t in stats.threads
        ],
        empty="No run in this window.",
    )


# --- the page ------------------------------------------------------------------------------


def window_label(window: Window) -> str:
    """The window in words, in UTC."""
    last = window.end - timedelta(microseconds=1)
    fmt = "%Y-%m-%d %H:%M"
    return f"{window.start.strftime(fmt)} to {last.strftime(fmt)} UTC, by {window.unit}"


def dashboard(stats: ProjectStats, project: str) -> Dashboard:
    """Everything the dashboard shows for stats of the project (its slug: the links open its
    thread list)."""
    total, timing = stats.total, stats.timing
    figures = [
        Figure("Runs", count_label(total.runs)),
        Figure(
            "Failure rate",
            percent_label(stats.failure_rate),
            f"{count_label(stats.statuses['failed'])} failed",
        ),
        Figure(
            "Tokens in / out",
            f"{count_label(total.input_tokens)} / {count_label(total.output_tokens)}",
        ),
        Figure("Cost", cost_label(total.cost), "at the price table's rates"),
        Figure(
            "Latency p50 / p95",
            f"{seconds_label(timing.latency_p50)} / {seconds_label(timing.latency_p95)}",
        ),
        Figure(
            "First token p50 / p95",
            f"{seconds_label(timing.ttft_p50)} / {seconds_label(timing.ttft_p95)}",
        ),
    ]
    charts = [
        runs_chart(stats, project),
        failure_chart(stats, project),
        model_chart(
            stats,
            project,
            slug="tokens",
            title="Tokens by model",
            value=_tokens,
            label=lambda v: count_label(int(v)),
            summary=f"{count_label(total.input_tokens + total.output_tokens)} tokens",
        ),
        model_chart(
            stats,
            project,
            slug="cost",
            title="Cost by model",
            value=_cost,
            label=lambda v: cost_label(v) if v else "$0",
            summary=f"{cost_label(total.cost)} (models without a price count $0)",
        ),
        timing_chart(stats, project, slug="latency", title="Run latency", latency=True),
        timing_chart(stats, project, slug="ttft", title="Time to first token", latency=False),
    ]
    tops = [
        _top(project, "models", "Top models", stats.models, stats.window, "No run in this window."),
        _top(
            project,
            "agents",
            "Top agents",
            stats.agents,
            stats.window,
            "No message of this window names its agent.",
        ),
        _busiest_threads(stats),
    ]
    return Dashboard(
        window_label(stats.window), figures, charts, tops, threads_link(project, stats.window)
    )


# --- score averages (issue 28) ---------------------------------------------------------------


def _average_label(value: float) -> str:
    """An average to two decimals at most."""
    return f"{round(value, 2):g}"


def score_chart(series: ScoreSeries, window: Window, project: str) -> Chart:
    """One config's average per bucket as bars (scaled to the config's maximum, else to the
    highest average), with its numbers; it links to the thread list showing that score."""
    starts = window.buckets()
    points = [series.points.get(start) for start in starts]
    averages = [p[0] for p in points if p is not None]
    top = series.high if series.high is not None and series.high > 0 else max(averages, default=0)
    low = series.low if series.low is not None and series.low < 0 else 0.0
    columns = [
        [
            (
                (p[0] - low) if p is not None else None,
                "series-a",
                f"{bucket_label(start, window.unit, short=False)}: average "
                f"{_average_label(p[0])} of {count_label(p[1])}"
                if p is not None
                else "no score",
            )
        ]
        for start, p in zip(starts, points, strict=True)
    ]
    scored = sum(p[1] for p in points if p is not None)
    mean = sum(p[0] * p[1] for p in points if p is not None) / scored if scored else None
    chart = Chart(
        slug=f"score-{slugify(series.name) or 'score'}",
        title=f"Score: {series.name}",
        summary=(
            f"average {_average_label(mean)} of {count_label(scored)} scores"
            if mean is not None
            else "no score in this window"
        ),
        link=threads_link(project, window, scoreColumn=series.name, sort="score_asc"),
        link_label=f"Threads by {series.name}, lowest first",
        headers=["When", "Average", "Scores"],
        rows=[
            [
                Cell(bucket_label(start, window.unit, short=False)),
                Cell(_average_label(p[0]) if p is not None else NO_VALUE),
                Cell(count_label(p[1]) if p is not None else "0"),
            ]
            for start, p in zip(starts, points, strict=True)
        ],
        rects=grouped_rects(columns, scale=top - low),
        legend=[Series(f"average {series.name}", "series-a")],
        top=_average_label(top),
    )
    if starts:
        chart.first = bucket_label(starts[0], window.unit, short=False)
        chart.last = bucket_label(starts[-1], window.unit, short=False)
    return chart


def score_charts(series: Sequence[ScoreSeries], window: Window, project: str) -> list[Chart]:
    """A chart of averages per bucket for each score config (links: the project's list)."""
    return [score_chart(one, window, project) for one in series]
