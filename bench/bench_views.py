"""Server time and query count of the conversation view as threads grow.

Builds threads with 100, 1,000 and 10,000 active messages and one with 100 branches on a
throwaway embedded PostgreSQL (or DATABASE_URL), then requests each page in-process and prints
a table of wall-clock median and best times, this process's CPU time, query counts and page
size. Target: <= 150 ms at every size (flat).

    .venv/bin/python bench/bench_views.py [--repeat 15]
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

TARGET_MS = 150.0


def linear_thread(count: int, title: str) -> Any:
    """A thread of count alternating user/assistant messages in one committed run."""
    from transcripts import ledger
    from transcripts.ledger.default_project import default_project

    thread, _ = ledger.create_thread(project=default_project(), title=title)
    run, _ = ledger.begin_run(thread=thread, model="bench-model")
    items = [
        {
            "seq": i + 1,
            "kind": "message",
            "data": {
                "role": "user" if i % 2 == 0 else "assistant",
                "parts": [
                    {
                        "type": "text",
                        "text": f"Message {i}: some **Markdown** with `code` and a list\n\n"
                        "- one\n- two\n\n```python\nprint('hello')\n```",
                    }
                ],
                "metadata": {"usage": {"inputTokens": 10, "outputTokens": 20}},
            },
        }
        for i in range(count)
    ]
    for start in range(0, count, 2000):
        ledger.append_events(run=run, events=items[start : start + 2000])
    ledger.commit_run(run=run)
    thread.refresh_from_db()
    return thread


def branched_thread(count: int, branches: int) -> Any:
    """A thread of count active messages with branches alternatives hanging off its path."""
    from transcripts import ledger
    from transcripts.models import Message

    thread = linear_thread(count, f"{count} messages, {branches} branches")
    main = list(
        Message.objects.filter(thread=thread, active=True)
        .order_by("depth")
        .values_list("id", flat=True)
    )
    step = max(1, (count - 1) // branches)
    for b in range(branches):
        fork = main[min(b * step, count - 2)]
        run, _ = ledger.begin_run(thread=thread, fork_from=fork)
        ledger.append_events(
            run=run,
            events=[{"seq": 1, "kind": "text-delta", "data": {"delta": f"alternative {b}"}}],
        )
        ledger.commit_run(run=run)
    # Continue the original path so the long branch is the active one again.
    run, _ = ledger.begin_run(thread=thread, fork_from=main[-1])
    ledger.append_events(
        run=run, events=[{"seq": 1, "kind": "text-delta", "data": {"delta": "the end"}}]
    )
    ledger.commit_run(run=run)
    thread.refresh_from_db()
    return thread


def measure(client: Any, url: str, repeat: int) -> tuple[float, float, float, int, int]:
    """(median ms, best ms, median CPU ms of this process, queries, bytes) of GET url."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(2):
        client.get(url)
    times, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    return (
        statistics.median(times),
        min(times),
        statistics.median(cpu),
        len(captured),
        len(response.content),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member
    from transcripts.models import Message

    user = get_user_model().objects.create_user("bench")
    # A member with a role, as readers are: the view pays for the access check it really does.
    set_member(project=default_project(), user=user, role="editor")
    client = Client()
    client.force_login(user)
    cases: list[tuple[str, str]] = []
    for size in (100, 1_000, 10_000):
        started = time.perf_counter()
        thread = linear_thread(size, f"{size} messages")
        print(f"built {size:>6} messages in {time.perf_counter() - started:.1f} s", flush=True)
        first = Message.objects.get(thread=thread, depth=0)
        middle = Message.objects.get(thread=thread, depth=size // 2)
        tail_first = Message.objects.get(thread=thread, depth=max(size - 50, 0))
        base = f"/t/{thread.id}/"
        cases += [
            (f"{size:,} active: conversation", base),
            (f"{size:,} active: around a permalink", f"{base}?leaf={middle.id}"),
            (f"{size:,} active: load earlier (htmx)", f"{base}?dir=before&from={tail_first.id}"),
            (f"{size:,} active: from the root", f"{base}?leaf={first.id}"),
        ]
    thread = branched_thread(1_000, 100)
    side = Message.objects.filter(thread=thread, active=False).order_by("depth").first()
    assert side is not None
    base = f"/t/{thread.id}/"
    cases += [
        ("1,000 + 100 branches: conversation", base),
        ("1,000 + 100 branches: a side branch", f"{base}?leaf={side.id}"),
        ("1,000 + 100 branches: tree map", f"{base}tree/"),
    ]
    print()
    header = (
        f"{'page':<42} {'median ms':>10} {'best ms':>8} {'cpu ms':>7} {'queries':>8} {'KiB':>7}"
    )
    print(header)
    print("-" * len(header))
    worst_median = 0.0
    medians: dict[str, float] = {}
    for label, url in cases:
        median, best, cpu, queries, size = measure(client, url, args.repeat)
        worst_median = max(worst_median, median)
        medians[label] = median
        print(
            f"{label:<42} {median:>10.1f} {best:>8.1f} {cpu:>7.1f} {queries:>8} {size / 1024:>7.1f}"
        )
    print()
    verdict = "OK" if worst_median <= TARGET_MS else "OVER TARGET"
    print(f"slowest median {worst_median:.1f} ms, target {TARGET_MS:.0f} ms: {verdict}")
    goal = f"<= {TARGET_MS:.0f} ms"
    smallest = ("100 active", medians["100 active: conversation"])
    for label in (
        "1,000 active: conversation",
        "10,000 active: conversation",
        "1,000 + 100 branches: tree map",
    ):
        figure(
            f"{label}, median",
            medians[label],
            "ms",
            goal=goal,
            baseline=smallest,
            ok=medians[label] <= TARGET_MS,
        )
    figure("slowest page, median", worst_median, "ms", goal=goal, ok=worst_median <= TARGET_MS)


if __name__ == "__main__":
    main()
