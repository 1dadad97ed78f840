"""Server time and query count of a share link's public page as the shared branch grows.

Builds threads of 100, 1,000 and 10,000 messages (as bench_views.py does) on a throwaway
embedded PostgreSQL (or DATABASE_URL), shares each one's whole active path and an alternative
branch, then requests each page in-process without a session and prints a table of wall-clock
median and best times, this process's CPU time, query counts and page size.

    .venv/bin/python bench/bench_shares.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_views import branched_thread, linear_thread, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    setup_django()
    from django.test import Client

    from transcripts import ledger
    from transcripts.models import Message

    cases: list[tuple[str, str]] = []
    for size in (100, 1_000, 10_000):
        started = time.perf_counter()
        thread = linear_thread(size, f"{size} messages")
        print(f"built {size:>6} messages in {time.perf_counter() - started:.1f} s", flush=True)
        _, secret = ledger.create_share(thread=thread, user=None)
        cases.append((f"{size:,} messages: whole branch", f"/s/{secret}/"))
    thread = branched_thread(1_000, 100)
    side = Message.objects.filter(thread=thread, active=False).order_by("-depth").first()
    assert side is not None
    _, secret = ledger.create_share(thread=thread, user=None, leaf_id=side.id)
    cases.append((f"1,000 + 100 branches: a side branch ({side.depth + 1})", f"/s/{secret}/"))
    client = Client()
    print()
    header = (
        f"{'page':<42} {'median ms':>10} {'best ms':>8} {'cpu ms':>7} {'queries':>8} {'KiB':>7}"
    )
    print(header)
    print("-" * len(header))
    for label, url in cases:
        median, best, cpu, queries, size = measure(client, url, args.repeat)
        print(
            f"{label:<42} {median:>10.1f} {best:>8.1f} {cpu:>7.1f} {queries:>8} {size / 1024:>7.1f}"
        )


if __name__ == "__main__":
    main()
