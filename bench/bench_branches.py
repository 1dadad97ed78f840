"""Server time, queries and size of the tree map and compare pages as branches multiply.

Builds threads with 50 and 1,000 regenerations of one answer and one of 2,000 messages with
1,000 branches along its path, on a throwaway embedded PostgreSQL (or DATABASE_URL), then
requests each page in-process and prints wall-clock median and best times, this process's CPU
time, query counts and page size. The tree map's output is bounded (50 branches listed at a
fork point, 300 lines in all), so its size and queries stay flat.

    .venv/bin/python bench/bench_branches.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import setup_django
from bench_views import branched_thread, measure


def regenerated(count: int) -> tuple[Any, Any]:
    """A prompt answered count times; returns the thread and the prompt."""
    from transcripts import ledger
    from transcripts.ledger.default_project import default_project

    thread, _ = ledger.create_thread(project=default_project(), title=f"{count} answers")
    run, _ = ledger.begin_run(thread=thread)
    message = {"role": "user", "parts": [{"type": "text", "text": "Name a number"}]}
    ledger.append_events(run=run, events=[{"seq": 1, "kind": "message", "data": message}])
    prompt = ledger.commit_run(run=run).messages.get()
    for n in range(count):
        run, _ = ledger.begin_run(thread=thread, fork_from=prompt.id)
        delta = {"delta": f"Number **{n}** is my answer, and | a | table |"}
        ledger.append_events(run=run, events=[{"seq": 1, "kind": "text-delta", "data": delta}])
        ledger.commit_run(run=run)
    return thread, prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member

    user = get_user_model().objects.create_user("bench")
    set_member(project=default_project(), user=user, role="editor")
    client = Client()
    client.force_login(user)
    cases: list[tuple[str, str]] = []
    for count in (50, 1_000):
        started = time.perf_counter()
        thread, prompt = regenerated(count)
        print(f"built {count:>5} answers in {time.perf_counter() - started:.1f} s", flush=True)
        cases += [
            (f"{count:,} answers at one point: tree map", f"/t/{thread.id}/tree/"),
            (
                f"{count:,} answers at one point: compare",
                f"/t/{thread.id}/fork/{prompt.id}/compare/",
            ),
        ]
    started = time.perf_counter()
    thread = branched_thread(2_000, 1_000)
    print(f"built 2,000 + 1,000 branches in {time.perf_counter() - started:.1f} s", flush=True)
    cases.append(("2,000 msgs + 1,000 branches: tree map", f"/t/{thread.id}/tree/"))
    print()
    header = (
        f"{'page':<42} {'median ms':>10} {'best ms':>8} {'cpu ms':>7} {'queries':>8} {'KiB':>7}"
    )
    print(header)
    print("-" * len(header))
    medians: dict[str, float] = {}
    for label, url in cases:
        median, best, cpu, queries, size = measure(client, url, args.repeat)
        medians[label] = median
        print(
            f"{label:<42} {median:>10.1f} {best:>8.1f} {cpu:>7.1f} {queries:>8} {size / 1024:>7.1f}"
        )
    # The key figures: each page at 1,000 answers against the same at 50 (how it grows).
    for page in ("tree map", "compare"):
        figure(
            f"{page} at 1,000 answers at one point, median",
            medians[f"1,000 answers at one point: {page}"],
            "ms",
            baseline=("50 answers", medians[f"50 answers at one point: {page}"]),
        )
    figure(
        "tree map at 2,000 messages + 1,000 branches, median",
        medians["2,000 msgs + 1,000 branches: tree map"],
        "ms",
    )


if __name__ == "__main__":
    main()
