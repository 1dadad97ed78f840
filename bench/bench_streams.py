"""Live streams on one server process: how many open, how fast an append reaches them all, what
each costs, and whether the writers still get through.

Starts one uvicorn process (config.asgi, DEBUG off, the production pool) on a loopback port,
then for each count (100, 1,000, 5,000 by default) opens that many `GET /runs/{id}/stream` on
one run from raw asyncio sockets and prints: streams refused; NOTIFY -> last subscriber p50/p95
(from an append's send to its frame's arrival on the last of the open streams); memory per open
stream (the server's RSS delta / open streams); PostgreSQL backends (`pg_stat_activity`) with
the streams open; single-event append p99 with and without the streams (and appends refused).

    .venv/bin/python bench/bench_streams.py [--counts 100,1000,5000] [--appends 50]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_api import _free_port, _percentile, start_server, stop_server


@dataclass
class Tally:
    """How many open streams each seq reached, and an event set when it reached them all."""

    expected: int = 0
    counts: Counter[int] = field(default_factory=Counter)
    all_in: dict[int, asyncio.Event] = field(default_factory=dict)

    def arrived(self, seq: int) -> None:
        self.counts[seq] += 1
        if self.counts[seq] >= self.expected:
            self.event(seq).set()

    def event(self, seq: int) -> asyncio.Event:
        return self.all_in.setdefault(seq, asyncio.Event())


@dataclass
class Sse:
    """One raw SSE connection: its status, set once it listens (or failed), and its socket."""

    status: int = 0
    listening: asyncio.Event = field(default_factory=asyncio.Event)
    writer: asyncio.StreamWriter | None = None


@dataclass
class Stream(Sse):
    """A run's stream: when each seq arrived."""

    arrivals: dict[int, float] = field(default_factory=dict)


async def follow_sse(
    port: int, path: str, header: str, stream: Sse, on_line: Callable[[bytes], None]
) -> None:
    """GET path with one more header line; every line after the status goes to on_line (the
    retry hint marks the stream listening)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        stream.listening.set()
        return
    stream.writer = writer
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{header}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    try:
        status_line = await reader.readline()
        stream.status = int(status_line.split()[1]) if status_line else 0
        if stream.status != 200:
            return
        async for line in reader:
            if line.startswith(b"retry:"):
                stream.listening.set()
            else:
                on_line(line)
    except (OSError, ValueError, IndexError):
        pass
    finally:
        stream.listening.set()


async def _follow(port: int, path: str, token: str, stream: Stream, tally: Tally) -> None:
    """Open the stream and record the seq of each event frame as it arrives."""

    def on_line(line: bytes) -> None:
        if line.startswith(b"id: "):
            seq = int(line[4:])
            stream.arrivals[seq] = time.perf_counter()
            tally.arrived(seq)

    await follow_sse(port, path, f"Authorization: Bearer {token}", stream, on_line)


def _new_run(title: str) -> str:
    from tests.factories import make_thread
    from transcripts import ledger

    run, _ = ledger.begin_run(thread=make_thread(title))
    return str(run.id)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _backends() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


async def _append(client: httpx.AsyncClient, run_id: str, seq: int) -> tuple[float, float, int]:
    """One single-event append: (sent at, latency s, status)."""
    body = {"events": [{"seq": seq, "kind": "text-delta", "data": {"delta": f"t{seq} "}}]}
    sent = time.perf_counter()
    response = await client.post(f"/api/v1/runs/{run_id}/events", json=body)
    return sent, time.perf_counter() - sent, response.status_code


async def _appends(
    client: httpx.AsyncClient,
    run_id: str,
    first_seq: int,
    count: int,
    streams: list[Stream],
    tally: Tally,
) -> tuple[list[float], list[float], int]:
    """count appends one after the other, each once the open streams got the last one:
    (append latencies, send -> last open stream latencies, appends refused)."""
    latencies: list[float] = []
    fanouts: list[float] = []
    refused = 0
    open_streams = [s for s in streams if s.status == 200]
    for seq in range(first_seq, first_seq + count):
        sent, latency, status = await _append(client, run_id, seq)
        latencies.append(latency)
        if status != 200:
            refused += 1
            continue
        if open_streams:
            with suppress(TimeoutError):
                await asyncio.wait_for(tally.event(seq).wait(), 10)
        arrived = [s.arrivals[seq] for s in open_streams if seq in s.arrivals]
        if arrived:
            fanouts.append(max(arrived) - sent)
    return latencies, fanouts, refused


async def bench_count(port: int, pid: int, token: str, count: int, appends: int) -> None:
    """Open count streams on a fresh run and print what they cost."""
    from asgiref.sync import sync_to_async

    run_id = await sync_to_async(_new_run)(f"bench {count} streams")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
    ) as client:
        tally = Tally()
        without, _, refused_without = await _appends(client, run_id, 1, appends, [], tally)
        rss_before = _rss_kb(pid)
        streams = [Stream() for _ in range(count)]
        path = f"/api/v1/runs/{run_id}/stream?afterSeq={appends}"
        started = time.perf_counter()
        tasks = [asyncio.create_task(_follow(port, path, token, s, tally)) for s in streams]
        await asyncio.wait_for(asyncio.gather(*(s.listening.wait() for s in streams)), 120)
        opened_in = time.perf_counter() - started
        await asyncio.sleep(1)
        open_count = tally.expected = sum(1 for s in streams if s.status == 200)
        rss_delta = _rss_kb(pid) - rss_before
        backends = await sync_to_async(_backends)()
        with_streams, fanouts, refused_with = await _appends(
            client, run_id, appends + 1, appends, streams, tally
        )
        for s in streams:
            if s.writer is not None:
                s.writer.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    per_stream = rss_delta / open_count if open_count else float("nan")
    statuses = Counter(s.status for s in streams if s.status != 200)
    refusals = ", ".join(f"{n} x {status or 'no answer'}" for status, n in statuses.items())
    print(
        f"{count:>5} streams: {count - open_count} refused{f' ({refusals})' if refusals else ''},"
        f" opened in {opened_in:.1f} s;"
        f" NOTIFY -> last subscriber p50 {_percentile(fanouts, 0.5) * 1000:.0f} ms,"
        f" p95 {_percentile(fanouts, 0.95) * 1000:.0f} ms;"
        f" {per_stream:.0f} KiB per open stream; {backends} PostgreSQL backends;"
        f" append p99 {_percentile(without, 0.99) * 1000:.1f} ms without streams,"
        f" {_percentile(with_streams, 0.99) * 1000:.1f} ms with"
        f" ({refused_without} + {refused_with} appends refused)",
        flush=True,
    )


def _raise_open_files() -> int:
    """RLIMIT_NOFILE up to its hard limit (the server inherits it); returns the new limit."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="100,1000,5000", help="streams to open, in turn")
    parser.add_argument("--appends", type=int, default=50, help="appends measured per count")
    args = parser.parse_args()

    limit = _raise_open_files()
    setup_django(durable=True)
    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.tokens import issue_token

    token = issue_token(project=default_project(), name="bench", scopes=["ingest", "read"])[1]
    port = _free_port()
    server = start_server(port, 1)
    print(f"one uvicorn process (pid {server.pid}), RLIMIT_NOFILE {limit}", flush=True)
    try:
        for count in (int(c) for c in args.counts.split(",")):
            if 2 * count + 100 > limit:
                print(f"{count:>5} streams: skipped (RLIMIT_NOFILE {limit} is too low)")
                continue
            asyncio.run(bench_count(port, server.pid, token, count, args.appends))
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
