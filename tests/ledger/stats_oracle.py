"""The dashboard's figures counted the slow way: one pass over every run of the window (the
scan the dashboard read before migration 0020's rollups), kept here as the oracle the
rollup-backed `transcripts.selectors.stats.project_stats` must agree with.

One change from the old scan: a run not yet finished (or with no first event) has no latency
(time to first token), where the old scan's greatest(0, NULL) counted it as 0 s.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from django.db import connection

from transcripts.selectors.stats import STATUS_GROUPS, Window

_TOKENS = """greatest(0, CASE
    WHEN jsonb_typeof(r.usage -> '{camel}') = 'number' THEN (r.usage ->> '{camel}')::numeric
    WHEN jsonb_typeof(r.usage -> '{snake}') = 'number' THEN (r.usage ->> '{snake}')::numeric
    ELSE 0 END)"""
_START = "coalesce(r.started_at, r.created_at)"
_SCAN = f"""SELECT r.thread_id::text, r.status, r.model,
       date_trunc(%(unit)s, r.created_at AT TIME ZONE 'UTC'),
       {_TOKENS.format(camel="inputTokens", snake="input_tokens")},
       {_TOKENS.format(camel="outputTokens", snake="output_tokens")},
       CASE WHEN r.finished_at IS NOT NULL
           THEN greatest(0, extract(epoch FROM r.finished_at - {_START})) END,
       CASE WHEN r.first_event_at IS NOT NULL
           THEN greatest(0, extract(epoch FROM r.first_event_at - {_START})) END
FROM transcripts_run r JOIN transcripts_thread t ON t.id = r.thread_id
WHERE t.project_id = %(project)s AND r.created_at >= %(start)s AND r.created_at < %(end)s
    AND (%(hidden)s OR NOT t.hidden)"""
_PERCENTILES = """SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
    percentile_cont(0.95) WITHIN GROUP (ORDER BY x) FROM unnest(%s::float8[]) x"""


@dataclass
class Scanned:
    """The window's figures from its runs: (bucket, group, model) -> runs, (bucket, model) ->
    tokens, the threads' runs and failures, and the exact p50/p95 (None when no run)."""

    runs: Counter[tuple[datetime, str, str]] = field(default_factory=Counter)
    tokens: Counter[tuple[datetime, str, str]] = field(default_factory=Counter)
    threads: Counter[tuple[str, str]] = field(default_factory=Counter)
    latency: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)


def scan(project_id: int, window: Window, *, include_hidden: bool) -> Scanned:
    """Every run of the window, counted."""
    found = Scanned()
    params = {
        "project": project_id,
        "start": window.start,
        "end": window.end,
        "hidden": include_hidden,
        "unit": window.unit,
    }
    with connection.cursor() as cursor:
        cursor.execute(_SCAN, params)
        for thread, status, model, bucket, tokens_in, tokens_out, lat, ttft in cursor:
            when = bucket.replace(tzinfo=UTC)
            group = STATUS_GROUPS[status]
            found.runs[when, group, model] += 1
            found.tokens[when, model, "in"] += int(tokens_in)
            found.tokens[when, model, "out"] += int(tokens_out)
            found.threads[thread, "runs"] += 1
            found.threads[thread, "failed"] += status == "failed"
            if lat is not None:
                found.latency.append(float(lat))
            if ttft is not None:
                found.ttft.append(float(ttft))
    return found


def exact_percentiles(values: list[float]) -> tuple[float | None, float | None]:
    """p50 and p95 of values as PostgreSQL's percentile_cont gives them."""
    with connection.cursor() as cursor:
        cursor.execute(_PERCENTILES, [values])
        p50, p95 = cursor.fetchone()
    return (
        float(p50) if isinstance(p50, float | Decimal) else None,
        float(p95) if isinstance(p95, float | Decimal) else None,
    )
