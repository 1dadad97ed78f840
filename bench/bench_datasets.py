"""Time, queries and peak Python memory of a dataset export as the project grows.

Builds threads of a prompt answered three times (two regenerations) and a follow-up turn, on
a throwaway embedded PostgreSQL (or DATABASE_URL), then writes each kind of dataset in-process
and prints rows, seconds, rows per second, queries, and the peak of memory traced while
writing (in a second pass, as tracing slows Python down). The peak should stay flat as the
threads grow: one batch of threads is in memory at a time.

    .venv/bin/python bench/bench_datasets.py [--threads 200 400]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django


def build(project: Any, count: int) -> None:
    """count threads with one fork point of three answers each."""
    from transcripts import ledger

    def run(thread: Any, fork_from: Any, *items: tuple[str, dict[str, Any]]) -> Any:
        begun, _ = ledger.begin_run(thread=thread, fork_from=fork_from)
        events = [{"seq": i + 1, "kind": k, "data": d} for i, (k, d) in enumerate(items)]
        ledger.append_events(run=begun, events=events)
        return ledger.commit_run(run=begun)

    def said(text: str) -> tuple[str, dict[str, Any]]:
        return ("text-delta", {"delta": text})

    def asked(text: str) -> tuple[str, dict[str, Any]]:
        return ("message", {"role": "user", "parts": [{"type": "text", "text": text}]})

    for n in range(count):
        thread, _ = ledger.create_thread(project=project, title=f"Thread {n}")
        run(thread, ledger.HEAD, asked(f"Question {n}: " + "context " * 50))
        prompt = thread.messages.get()
        for answer in range(3):
            run(thread, prompt.id, said(f"Answer {answer} to {n}. " + "words " * 80))
        run(thread, ledger.HEAD, asked("And then?"))
        run(thread, ledger.HEAD, said("Then this."))


def measure(project: Any, kind: str, values: dict[str, str]) -> tuple[int, float, int, int]:
    """(rows, seconds, queries, peak traced bytes) of writing one dataset."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from transcripts import datasets

    query = datasets.parse_query(kind, values)
    started = time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        rows = sum(1 for _ in datasets.jsonl_lines(project, query))
    elapsed = time.perf_counter() - started
    # A second pass for memory: tracing slows Python down several times.
    tracemalloc.start()
    sum(1 for _ in datasets.jsonl_lines(project, query))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return rows, elapsed, len(queries), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[200, 400])
    args = parser.parse_args()
    setup_django()
    from transcripts.ledger.projects import create_project

    project = create_project(slug="bench-datasets", name="Bench datasets")
    built = 0
    for total in args.threads:
        build(project, total - built)
        built = total
        for kind, values in (
            ("preferences", {"format": "trl"}),
            ("sft", {"format": "openai", "branches": "all"}),
        ):
            rows, elapsed, queries, peak = measure(project, kind, values)
            print(
                f"{total:>6} threads  {kind:<11} {rows:>6} rows  {elapsed:6.2f} s"
                f"  {rows / elapsed:8.0f} rows/s  {queries:>4} queries"
                f"  peak {peak / 1e6:6.1f} MB"
            )


if __name__ == "__main__":
    main()
