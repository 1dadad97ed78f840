"""Live lists on one server process: what open project streams (`GET /p/<slug>/live/`, one per
open thread list or conversation tab) cost in database connections, and how long a thread
created over the API takes to reach them.

Starts one uvicorn process (config.asgi, DEBUG off, the production pool), opens that many
project streams as one signed-in member from raw asyncio sockets, then creates threads over the
API one after the other (each once every stream heard of the previous one) and prints:
PostgreSQL backends with the streams open; create sent -> first and last stream p50/p95 (from
the create's request sent to its `thread` event's arrival), and the create's own latency.

    .venv/bin/python bench/bench_live_lists.py [--counts 100,1000] [--creates 30]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_api import _free_port, _percentile, start_server, stop_server
from bench_streams import Sse, _backends, _raise_open_files, follow_sse


@dataclass
class ListStream(Sse):
    """A project stream: when each thread's event arrived."""

    arrivals: dict[str, float] = field(default_factory=dict)


async def _follow(port: int, path: str, cookie: str, stream: ListStream) -> None:
    """Open the stream and note when the event of each thread arrives."""

    def on_line(line: bytes) -> None:
        if line.startswith(b'data: {"kind": "thread"'):
            thread = line.split(b'"thread": "')[1][:26].decode()
            stream.arrivals[thread] = time.perf_counter()

    await follow_sse(port, path, f"Cookie: {cookie}", stream, on_line)


def _member_cookie() -> tuple[str, str]:
    """A session cookie of a viewer of the default project, and the project's slug."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member

    project = default_project()
    user, _ = User.objects.get_or_create(username="bench-live-viewer")
    set_member(project=project, user=user, role="viewer")
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}", project.slug


async def _created(
    client: httpx.AsyncClient, streams: list[ListStream], n: int
) -> tuple[float, float, float]:
    """Create thread n over the API: (create latency, sent -> first, sent -> last stream)."""
    sent = time.perf_counter()
    response = await client.post("/api/v1/threads", json={"title": f"live bench {n}"})
    answered = time.perf_counter()
    thread = str(response.json()["id"])
    deadline = answered + 10  # (the event may come before the answer: NOTIFY is at commit)
    while time.perf_counter() < deadline and not all(thread in s.arrivals for s in streams):
        await asyncio.sleep(0.001)
    arrived = [s.arrivals[thread] for s in streams if thread in s.arrivals]
    if not arrived:
        return answered - sent, float("nan"), float("nan")
    return answered - sent, min(arrived) - sent, max(arrived) - sent


async def bench_count(
    port: int, token: str, cookie: str, slug: str, count: int, creates: int
) -> None:
    """Open count project streams and print what they cost and how fast news reaches them."""
    from asgiref.sync import sync_to_async

    before = await sync_to_async(_backends)()
    streams = [ListStream() for _ in range(count)]
    tasks = [asyncio.create_task(_follow(port, f"/p/{slug}/live/", cookie, s)) for s in streams]
    await asyncio.wait_for(asyncio.gather(*(s.listening.wait() for s in streams)), 120)
    await asyncio.sleep(1)
    open_streams = [s for s in streams if s.status == 200]
    backends = await sync_to_async(_backends)()
    rows: list[tuple[float, float, float]] = []
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ) as client:
        for n in range(creates):
            rows.append(await _created(client, open_streams, n))
    for s in streams:
        if s.writer is not None:
            s.writer.close()
    for task in tasks:
        task.cancel()
    with suppress(Exception):
        await asyncio.gather(*tasks, return_exceptions=True)
    first = [r[1] for r in rows]
    last = [r[2] for r in rows]
    refused = Counter(s.status for s in streams if s.status != 200)
    print(
        f"{count:>5} list streams: {count - len(open_streams)} refused {dict(refused)};"
        f" PostgreSQL backends {before} before, {backends} with them open;"
        f" create sent -> first stream p50 {_percentile(first, 0.5) * 1000:.1f} ms,"
        f" p95 {_percentile(first, 0.95) * 1000:.1f} ms;"
        f" -> last stream p50 {_percentile(last, 0.5) * 1000:.1f} ms,"
        f" p95 {_percentile(last, 0.95) * 1000:.1f} ms;"
        f" create p50 {_percentile([r[0] for r in rows], 0.5) * 1000:.1f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="100,1000", help="streams to open, in turn")
    parser.add_argument("--creates", type=int, default=30, help="threads created per count")
    args = parser.parse_args()

    limit = _raise_open_files()
    setup_django(durable=True)
    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.tokens import issue_token

    token = issue_token(project=default_project(), name="bench", scopes=["ingest", "read"])[1]
    cookie, slug = _member_cookie()
    port = _free_port()
    server = start_server(port, 1)
    print(f"one uvicorn process (pid {server.pid}), RLIMIT_NOFILE {limit}", flush=True)
    try:
        for count in (int(c) for c in args.counts.split(",")):
            asyncio.run(bench_count(port, token, cookie, slug, count, args.creates))
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
