"""Server time and query count of the run page (the trace) as runs grow.

Builds runs of 100, 1,000 and 10,000 events (steps, a tool call, text and reasoning deltas) on
a throwaway embedded PostgreSQL (or DATABASE_URL), then requests the page, the live fragment
an update re-renders and the trace's own read in-process, and prints wall-clock median and
best times, query counts and page size.

    .venv/bin/python bench/bench_trace.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import setup_django


def tool_run(count: int) -> Any:
    """A committed run of about count events: two steps around a tool call, then deltas."""
    from transcripts import ledger
    from transcripts.ledger.default_project import default_project

    thread, _ = ledger.create_thread(project=default_project(), title=f"{count} events")
    run, _ = ledger.begin_run(thread=thread, model="gpt-4o")
    call = {"toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}
    head = [
        ("step-started", {}),
        *[("reasoning", {"text": f"r{i} "}) for i in range(count // 10)],
        ("tool-call", call),
        ("step-finished", {"usage": {"inputTokens": 900, "outputTokens": 40}}),
        ("tool-result", {**call, "output": {"hits": 3}, "isError": False}),
        ("step-started", {}),
    ]
    deltas = [("text-delta", {"delta": f"w{i} "}) for i in range(count - len(head) - 1)]
    items = [*head, *deltas, ("step-finished", {"usage": {"inputTokens": 1200, "outputTokens": 9}})]
    events = [{"seq": i + 1, "kind": k, "data": d} for i, (k, d) in enumerate(items)]
    for start in range(0, len(events), 2000):
        ledger.append_events(run=run, events=events[start : start + 2000])
    return ledger.commit_run(run=run)


def measure(call: Any, repeat: int) -> tuple[float, float, int]:
    """(median ms, best ms, queries) of call()."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = call()
    assert getattr(first, "status_code", 200) == 200, first
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as captured:
        call()
    return statistics.median(times), min(times), len(captured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member
    from transcripts.selectors.trace import run_trace

    user = get_user_model().objects.create_user("bench")
    set_member(project=default_project(), user=user, role="viewer")
    client = Client()
    client.force_login(user)
    live = {"HX-Request": "true", "HX-Target": "live"}
    header = (
        f"{'events':>7} {'what':<28} {'median ms':>10} {'best ms':>8} {'queries':>8} {'KiB':>6}"
    )
    print(header)
    print("-" * len(header))
    medians: dict[tuple[int, str], float] = {}
    for count in (100, 1_000, 10_000):
        run = tool_run(count)
        url = f"/runs/{run.id}/"
        cases = [
            ("page", lambda url=url: client.get(url), len(client.get(url).content)),
            ("live fragment (htmx)", lambda url=url: client.get(url, headers=live), 0),
            ("trace read (selector)", lambda run=run: run_trace(run, now=timezone.now()), 0),
        ]
        for what, call, size in cases:
            median, best, queries = measure(call, args.repeat)
            print(
                f"{count:>7,} {what:<28} {median:>10.1f} {best:>8.1f} {queries:>8}"
                f" {size / 1024 if size else 0:>6.1f}"
            )
            medians[(count, what)] = median
    # The key figures: each at 10,000 events against the same at 100 (how it grows).
    for what in ("page", "live fragment (htmx)"):
        figure(
            f"run trace {what} at 10,000 events, median",
            medians[(10_000, what)],
            "ms",
            baseline=("100 events", medians[(100, what)]),
        )


if __name__ == "__main__":
    main()
