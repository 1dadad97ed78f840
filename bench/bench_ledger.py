"""Benchmark the ledger's write path against a raw COPY baseline.

    .venv/bin/python bench/bench_ledger.py [--events 200000] [--batch1-events N]

Starts a throwaway embedded PostgreSQL (unless DATABASE_URL is set), migrates it, then
measures appends of text-delta events through ledger.append_events in batches of 1, 16 and
256, and commit_run of 1,000-event runs. The baseline is one COPY of the same rows into a plain
table keyed by (run_id, seq), in the same database (fsync on); the same COPY into a plain table
keyed by (run_id, seq, thread_id) (the Citus-ready key) and into transcripts_event itself are
printed next to it. Target: batch 256 >= 40 % of the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

BATCH_SIZES = (1, 16, 256)
APPEND_TARGET = 0.40  # batch 256 must reach this share of the raw COPY rate
COMMIT_TARGET_MS = 50.0


sys.path.insert(0, str(ROOT / "bench"))
from _record import figure  # noqa: E402


def _setup() -> None:
    from _setup import setup_django

    print("starting a throwaway embedded PostgreSQL…", flush=True)
    setup_django(durable=True)


def _delta(seq: int) -> dict[str, Any]:
    return {"seq": seq, "kind": "text-delta", "data": {"delta": f"token{seq} "}}


def _new_run() -> Any:
    from transcripts import ledger
    from transcripts.ledger.default_project import default_project

    thread, _ = ledger.create_thread(project=default_project(), title="bench")
    run, _ = ledger.begin_run(thread=thread)
    return run


def bench_append(total: int, batch: int) -> float:
    """Events per second through ledger.append_events in batches of the given size."""
    from transcripts import ledger

    run = _new_run()
    batches = [
        [_delta(s) for s in range(start, min(start + batch, total + 1))]
        for start in range(1, total + 1, batch)
    ]
    started = time.perf_counter()
    for events in batches:
        ledger.append_events(run=run.id, events=events)
    elapsed = time.perf_counter() - started
    return total / elapsed


# The COPY targets: a plain table keyed by (run_id, seq) (the baseline), the same keyed by
# (run_id, seq, thread_id), and the event log itself.
PLAIN_TABLES = {
    "bench_plain_event": "PRIMARY KEY (run_id, seq)",
    "bench_plain_event_thread": "PRIMARY KEY (run_id, seq, thread_id)",
}


def _create_plain_tables() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table, key in PLAIN_TABLES.items():
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (run_id uuid NOT NULL, seq integer NOT NULL,"
                " kind varchar(200) NOT NULL, data jsonb NOT NULL, at timestamptz NOT NULL,"
                f" thread_id uuid NOT NULL, {key})"
            )


def bench_copy(total: int, table: str = "bench_plain_event") -> float:
    """Events per second of one COPY of the same rows (one transaction) into table."""
    from django.db import connection, transaction
    from django.utils import timezone

    from transcripts.ids import to_uuid

    run = _new_run()
    thread_uuid, run_uuid = to_uuid(run.thread_id), to_uuid(run.id)
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        now = timezone.now()
        with cursor.cursor.copy(
            f"COPY {table} (thread_id, run_id, seq, kind, data, at) FROM STDIN"
        ) as copy:
            for seq in range(1, total + 1):
                event = _delta(seq)
                data = json.dumps(event["data"], ensure_ascii=False, separators=(",", ":"))
                copy.write_row((thread_uuid, run_uuid, seq, event["kind"], data, now))
    elapsed = time.perf_counter() - started
    return total / elapsed


def _long_run_events(count: int) -> list[dict[str, Any]]:
    """A realistic 1,000-event turn: prompt, reasoning, a tool round trip, a long answer."""
    items: list[tuple[str, dict[str, Any]]] = [
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Plan my trip."}]}),
        ("step-started", {}),
    ]
    items += [("reasoning", {"text": f"thought {n} "}) for n in range(150)]
    items += [
        ("tool-call", {"toolCallId": "c1", "toolName": "search", "input": {"q": "trains"}}),
        ("step-finished", {"finishReason": "tool-calls", "usage": {"inputTokens": 900}}),
        ("tool-result", {"toolCallId": "c1", "output": {"hits": 3}, "isError": False}),
        ("step-started", {}),
    ]
    while len(items) < count - 1:
        items.append(("text-delta", {"delta": f"word{len(items)} "}))
    items.append(("step-finished", {"finishReason": "stop", "usage": {"outputTokens": 850}}))
    return [{"seq": n, "kind": k, "data": d} for n, (k, d) in enumerate(items, start=1)]


def bench_commit(runs: int, events: int) -> list[float]:
    """Milliseconds per commit_run of a run holding the given number of events."""
    from transcripts import ledger

    timings = []
    batch = _long_run_events(events)
    for _ in range(runs):
        run = _new_run()
        for start in range(0, len(batch), 256):
            ledger.append_events(run=run.id, events=batch[start : start + 256])
        started = time.perf_counter()
        ledger.commit_run(run=run.id)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events per batch size")
    parser.add_argument(
        "--batch1-events",
        type=int,
        default=None,
        help="fewer events for batch size 1, which is slow (default: as many as --events)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating COPY / batch-256 rounds (best kept)"
    )
    parser.add_argument("--commit-runs", type=int, default=20)
    parser.add_argument("--commit-events", type=int, default=1000)
    args = parser.parse_args()
    if args.batch1_events is None:
        args.batch1_events = args.events
    _setup()
    from django.conf import settings

    print(f"TRANSCRIPTS_SNAPSHOT_EVERY = {settings.TRANSCRIPTS_SNAPSHOT_EVERY}")
    _create_plain_tables()
    bench_append(2_000, 256)  # warm up the connection and the caches
    # The baselines and the batch of 256 alternate, so a busy machine slows them alike.
    targets = (*PLAIN_TABLES, "transcripts_event")
    rounds: dict[str, list[float]] = {table: [] for table in targets}
    appends = []
    for _ in range(args.rounds):
        for table in targets:
            rounds[table].append(bench_copy(args.events, table))
        appends.append(bench_append(args.events, 256))
    copies = rounds["bench_plain_event"]
    baseline = max(copies)
    print()
    for table, label in zip(
        targets, ("(run_id, seq)", "(run_id, seq, thread_id)", "transcripts_event"), strict=True
    ):
        best = max(rounds[table])
        print(
            f"raw COPY {label:<24} {args.events:>8,} events  {best:>10,.0f} events/s"
            f"  {best / baseline:6.1%} of the baseline"
            f"  (best of {args.rounds}: {', '.join(f'{c:,.0f}' for c in rounds[table])})"
        )
    rates = {256: max(appends)}
    for batch in (1, 16):
        total = min(args.events, args.batch1_events) if batch == 1 else args.events
        rates[batch] = bench_append(total, batch)
    for batch in BATCH_SIZES:
        total = min(args.events, args.batch1_events) if batch == 1 else args.events
        note = f"  (only {total:,} events for batch 1)" if total != args.events else ""
        if batch == 256:
            note = f"  (best of {args.rounds}: {', '.join(f'{a:,.0f}' for a in appends)})"
        print(
            f"append, batch {batch:>4}     {total:>8,} events  {rates[batch]:>10,.0f} events/s"
            f"  {rates[batch] / baseline:6.1%} of the baseline COPY{note}"
        )
    paired = [a / c for a, c in zip(appends, copies, strict=True)]
    print(f"batch 256 / COPY per round: {', '.join(f'{p:.1%}' for p in paired)}")
    ok = rates[256] / baseline >= APPEND_TARGET
    copy_baseline = ("raw COPY (run_id, seq)", baseline)
    for batch in BATCH_SIZES:
        figure(
            f"ledger append, batch {batch}",
            rates[batch],
            "events/s",
            goal=f">= {APPEND_TARGET:.0%} of COPY" if batch == 256 else "",
            ok=rates[batch] / baseline >= APPEND_TARGET if batch == 256 else None,
            baseline=copy_baseline,
        )
    timings = bench_commit(args.commit_runs, args.commit_events)
    median = statistics.median(timings)
    p95 = statistics.quantiles(timings, n=20)[-1] if len(timings) > 1 else timings[0]
    print(
        f"\ncommit_run of a {args.commit_events:,}-event run ({args.commit_runs} runs):"
        f" median {median:.1f} ms, p95 {p95:.1f} ms"
    )
    ok &= median < COMMIT_TARGET_MS
    figure(
        f"commit_run of a {args.commit_events:,}-event run, median",
        median,
        "ms",
        goal=f"< {COMMIT_TARGET_MS:.0f} ms",
        ok=median < COMMIT_TARGET_MS,
    )
    print(
        f"\ntargets: batch 256 >= {APPEND_TARGET:.0%} of COPY, commit < {COMMIT_TARGET_MS:.0f} ms:"
        f" {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
