"""Ingest API throughput and latency against the production server configuration.

Starts uvicorn (config.asgi, DEBUG off, several workers) on a loopback port, posts --events
events per batch size (1, 16, 256) from --clients concurrent connections, and prints events/s
and p50/p99 request latency, next to the ledger-only rate at the same batch size
(append_events in-process) and raw COPY into the event table, measured in the same run; then
single-event appends from one client (the latency target's setting). Then measures the time
from the moment an append request is sent to the event's arrival on an SSE subscriber (and,
for comparison, from its response), and says which targets were met.
Targets: batch 256 >= 50,000 events/s (4 clients); single-event append p99 <= 20 ms at 1 client;
append->SSE p95 <= 50 ms from the request's send. Every server is warmed first (`warm_up`: its
workers' first appends, which load the code and the pool, are printed on their own).

Issue 30's figures (FIGURE lines, bench/_record.py): the ledger in-process at batch 256, HTTP at
batch 256 from 4 clients and its share of the ledger (goal >= 75 %), single-event append p50/p99
at 1 client (goal p99 <= 10 ms). --ab adds uvicorn on asyncio + h11 against uvloop + httptools,
--baseline-root DIR a server running another checkout's code (a before/after in one run),
--granian granian (ASGI, uvloop) in uvicorn's place (not a dependency: `pip install granian`
first): each variant in turns (--rounds), with its rates and the server's CPU per request.

    .venv/bin/python bench/bench_api.py [--events 100000] [--workers 2] [--clients 4]
        [--ab] [--granian] [--baseline-root DIR] [--rounds 2]

The throwaway cluster runs with fsync and synchronous commit on, as in production.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import ROOT, setup_django

TARGET_BATCH_256_RATE = 50_000  # events/s
TARGET_SINGLE_P99_MS = 20.0
TARGET_SSE_P95_MS = 50.0
# Issue 30's goals: HTTP at batch 256 keeps 75 % of the ledger's in-process rate measured in the
# same run; a single-event append's p99 at one client within 10 ms.
GOAL_HTTP_SHARE = 0.75
GOAL_SINGLE_P99_MS = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _batches(run_id: str, total: int, size: int) -> list[bytes]:
    bodies = []
    for start in range(1, total + 1, size):
        events = [
            {"seq": seq, "kind": "text-delta", "data": {"delta": f"token {seq} "}}
            for seq in range(start, min(start + size, total + 1))
        ]
        bodies.append(json.dumps({"events": events}).encode())
    return bodies


def _settings_with_persistent_connections(seconds: int, root: Path = ROOT) -> dict[str, str]:
    """Environment for config.settings plus CONN_MAX_AGE (persistent database connections)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-api-"))
    (folder / "bench_api_settings.py").write_text(
        "from config.settings import *  # noqa: F403\n"
        f"DATABASES['default']['CONN_MAX_AGE'] = {seconds}  # noqa: F405\n"
        "DATABASES['default']['CONN_HEALTH_CHECKS'] = True  # noqa: F405\n"
    )
    return {
        "DJANGO_SETTINGS_MODULE": "bench_api_settings",
        "PYTHONPATH": os.pathsep.join([str(folder), str(root)]),
    }


def start_server(
    port: int,
    workers: int,
    conn_max_age: int = 0,
    *,
    root: Path = ROOT,
    options: tuple[str, ...] = (),
    server: str = "uvicorn",
) -> subprocess.Popen[bytes]:
    """uvicorn with the production settings (DEBUG off), on the benchmark database; root: the
    checkout whose code it serves (another one for a before/after in the same run), options:
    more uvicorn options (an A/B of its event loop and HTTP parser); server "granian": granian
    (ASGI, uvloop, HTTP/1) instead of uvicorn, the same workers."""
    env = {
        **os.environ,
        **(_settings_with_persistent_connections(conn_max_age, root) if conn_max_age else {}),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "benchmark-only"),
        "LOG_LEVEL": "ERROR",
        "TRANSCRIPTS_LOG_LEVEL": "ERROR",
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "config.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--lifespan",
        "off",
        "--log-level",
        "warning",
        "--no-access-log",
        # As serve and the production docs run it, unless the A/B says otherwise.
        *(options or ("--loop", "uvloop", "--http", "httptools")),
    ]
    if server == "granian":
        command = [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asginl",  # ASGI without lifespan, as uvicorn's --lifespan off
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--loop",
            "uvloop",
            "--http",
            "1",
            "--no-ws",
            "--log-level",
            "warning",
            "--no-access-log",
            *options,
            "config.asgi:application",
        ]
    process = subprocess.Popen(command, cwd=root, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).raise_for_status()
            return process
        except httpx.HTTPError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.2)


def server_cpu(process: subprocess.Popen[bytes]) -> float:
    """CPU seconds (user + system) the server's processes (its session) have used so far: what
    a request costs the server, which a box busy with other work changes far less than wall
    time. Linux (/proc)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == process.pid:  # the session's process group (start_new_session)
            total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _connect(port: int) -> http.client.HTTPConnection:
    """A keep-alive connection with Nagle off, as HTTP clients of APIs usually have it.

    http.client sends headers and body in two writes; with Nagle's algorithm on, the body
    waits for the server's delayed ACK (~40 ms) and the benchmark would measure that.
    """
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def post_all(port: int, token: str, jobs: list[tuple[str, list[bytes]]]) -> list[float]:
    """Post each job's bodies in order on its own keep-alive connection; returns latencies."""
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []

    def client(run_id: str, bodies: list[bytes]) -> None:
        conn = _connect(port)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        mine = []
        for body in bodies:
            started = time.perf_counter()
            conn.request("POST", f"/api/v1/runs/{run_id}/events", body, headers)
            response = conn.getresponse()
            payload = response.read()
            mine.append(time.perf_counter() - started)
            if response.status != 200:
                errors.append(f"{response.status} {payload[:200]!r}")
                return
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"appends failed: {errors[:3]}")
    return latencies


def warm_up(port: int, token: str, workers: int) -> float:
    """Batches of 256 from 4 connections per worker at once, 5 each (every worker gets some);
    returns the slowest (ms). A worker's first append loads what the path needs (the API's
    routes and schemas, the sync middleware chain, the pool's connections): up to 1.8 s on
    this box. Once per worker and start, so the rates are measured after it, as the ledger's
    own (in a process that has run it before); the cold start is printed on its own."""
    from tests.factories import make_thread
    from transcripts import ledger

    jobs = []
    for _ in range(4 * workers):
        run, _ = ledger.begin_run(thread=make_thread("bench warm-up"))
        jobs.append((run.id, _batches(run.id, 5 * 256, 256)))
    return max(post_all(port, token, jobs)) * 1000


def bench_api(port: int, token: str, total: int, size: int, clients: int) -> dict[str, float]:
    """events/s and latency percentiles of posting total events in batches of size."""
    from tests.factories import make_thread
    from transcripts import ledger

    per_client = total // clients
    jobs = []
    for _ in range(clients):
        run, _ = ledger.begin_run(thread=make_thread("bench"))
        jobs.append((run.id, _batches(run.id, per_client, size)))
    started = time.perf_counter()
    latencies = post_all(port, token, jobs)
    elapsed = time.perf_counter() - started
    return {
        "rate": per_client * clients / elapsed,
        "p50": _percentile(latencies, 0.50) * 1000,
        "p99": _percentile(latencies, 0.99) * 1000,
    }


def bench_ledger(total: int, size: int) -> float:
    """events/s of ledger.append_events called in-process (no HTTP)."""
    from tests.factories import make_thread
    from transcripts import ledger

    run, _ = ledger.begin_run(thread=make_thread("bench ledger"))
    batches = [json.loads(b)["events"] for b in _batches(run.id, total, size)]
    started = time.perf_counter()
    for batch in batches:
        ledger.append_events(run=run.id, events=batch)
    return total / (time.perf_counter() - started)


def bench_copy(total: int) -> float:
    """events/s of a raw COPY of the same rows into the event table (the floor of any path)."""
    from django.db import connection, transaction

    from tests.factories import make_thread
    from transcripts import ledger
    from transcripts.ids import to_uuid

    run, _ = ledger.begin_run(thread=make_thread("bench copy"))
    thread_uuid, run_uuid = to_uuid(run.thread_id), to_uuid(run.id)
    rows = [
        (thread_uuid, run_uuid, seq, "text-delta", json.dumps({"delta": f"token {seq} "}))
        for seq in range(1, total + 1)
    ]
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        sql = "COPY transcripts_event (thread_id, run_id, seq, kind, data, at) FROM STDIN"
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row((*row, "2026-01-01T00:00:00Z"))
    return total / (time.perf_counter() - started)


def bench_sse(port: int, token: str, appends: int) -> dict[str, float]:
    """Time from each single-event append's response to its frame on an SSE subscriber."""
    from tests.factories import make_thread
    from transcripts import ledger

    run, _ = ledger.begin_run(thread=make_thread("bench sse"))
    arrived: dict[int, float] = {}
    listening = threading.Event()

    def subscribe() -> None:
        url = f"http://127.0.0.1:{port}/api/v1/runs/{run.id}/stream"
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.stream("GET", url, headers=headers, timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("retry:"):
                    listening.set()
                elif line.startswith("id: "):
                    arrived[int(line[4:])] = time.perf_counter()
                elif line.startswith("event: status"):
                    return

    reader = threading.Thread(target=subscribe, daemon=True)
    reader.start()
    listening.wait(10)
    conn = _connect(port)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    sent: dict[int, float] = {}
    responded: dict[int, float] = {}
    for seq in range(1, appends + 1):
        body = json.dumps({"events": [{"seq": seq, "kind": "text-delta", "data": {"delta": "x"}}]})
        sent[seq] = time.perf_counter()
        conn.request("POST", f"/api/v1/runs/{run.id}/events", body, headers)
        conn.getresponse().read()
        responded[seq] = time.perf_counter()
        time.sleep(0.005)
    conn.request("POST", f"/api/v1/runs/{run.id}/commit", b"", headers)
    conn.getresponse().read()
    reader.join(30)
    # From the send: the whole way (request, append, commit, NOTIFY, frame). From the
    # response: what is left after the client hears back, often nothing (the frame is first).
    delays = [(arrived[s] - sent[s]) * 1000 for s in sent if s in arrived]
    after_response = [max(0.0, arrived[s] - responded[s]) * 1000 for s in sent if s in arrived]
    return {
        "p50": statistics.median(delays),
        "p95": _percentile(delays, 0.95),
        "response_p50": statistics.median(after_response),
        "response_p95": _percentile(after_response, 0.95),
        "lost": appends - len(delays),
    }


def bench_ab(
    args: argparse.Namespace, token: str, variants: list[Variant], ledger_rate: float
) -> None:
    """Each server variant at batch 256 from --clients connections and at single events from
    one, in turns (--rounds), each against the ledger's in-process rate of the same run."""
    results: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    for round_ in range(args.rounds):
        for variant in variants:
            port = _free_port()
            server = start_server(
                port,
                args.workers,
                args.conn_max_age,
                root=variant.root,
                options=variant.options,
                server=variant.server,
            )
            try:
                warm_up(port, token, args.workers)
                cpu = server_cpu(server)
                bulk = bench_api(port, token, args.events, 256, args.clients)
                bulk["cpu"] = (server_cpu(server) - cpu) * 1000 / -(-args.events // 256)
                cpu = server_cpu(server)
                single = bench_api(port, token, args.single_events, 1, 1)
                single["cpu"] = (server_cpu(server) - cpu) * 1000 / args.single_events
            finally:
                stop_server(server)
            results.setdefault(variant.name, []).append((bulk, single))
            print(
                f"A/B round {round_ + 1} {variant.name}: batch 256 {bulk['rate']:,.0f} events/s"
                f" ({bulk['rate'] / ledger_rate:.0%} of the ledger);"
                f" single event p50 {single['p50']:.2f} ms p99 {single['p99']:.2f} ms;"
                f" server CPU per request: {bulk['cpu']:.2f} ms (batch 256),"
                f" {single['cpu']:.2f} ms (single event)",
                flush=True,
            )
    first = variants[0].name
    for variant in variants:
        runs = results[variant.name]
        rate = statistics.median(bulk["rate"] for bulk, _ in runs)
        p50 = statistics.median(single["p50"] for _, single in runs)
        p99 = statistics.median(single["p99"] for _, single in runs)
        bulk_cpu = statistics.median(bulk["cpu"] for bulk, _ in runs)
        single_cpu = statistics.median(single["cpu"] for _, single in runs)
        first_runs = results[first]
        figure(
            f"A/B {variant.name}: HTTP batch 256 x {args.clients} clients",
            rate,
            "events/s",
            goal=">= 75% of the ledger",
            baseline=("ledger in-process", ledger_rate),
            ok=rate >= 0.75 * ledger_rate,
            note=" ".join(variant.options)
            or (variant.server if variant.server != "uvicorn" else str(variant.root)),
        )
        figure(
            f"A/B {variant.name}: single-event append p50, 1 client",
            p50,
            "ms",
            baseline=(f"A/B {first}", statistics.median(s["p50"] for _, s in first_runs)),
        )
        figure(
            f"A/B {variant.name}: single-event append p99, 1 client",
            p99,
            "ms",
            goal=f"<= {GOAL_SINGLE_P99_MS:g} ms",
            ok=p99 <= GOAL_SINGLE_P99_MS,
        )
        figure(
            f"A/B {variant.name}: server CPU per batch-256 request",
            bulk_cpu,
            "ms",
            baseline=(f"A/B {first}", statistics.median(b["cpu"] for b, _ in first_runs)),
        )
        figure(
            f"A/B {variant.name}: server CPU per single-event request",
            single_cpu,
            "ms",
            baseline=(f"A/B {first}", statistics.median(s["cpu"] for _, s in first_runs)),
        )


class Variant(NamedTuple):
    """A server to compare: the code of a checkout, with some uvicorn options."""

    name: str
    root: Path
    options: tuple[str, ...] = ()
    server: str = "uvicorn"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per batch size")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--clients", type=int, default=4, help="concurrent connections")
    parser.add_argument("--sizes", default="1,16,256", help="batch sizes")
    parser.add_argument("--sse-appends", type=int, default=300)
    parser.add_argument(
        "--single-events", type=int, default=2000, help="single-event appends from one client"
    )
    parser.add_argument(
        "--ab",
        action="store_true",
        help="also A/B uvicorn's event loop and HTTP parser (asyncio + h11 against the"
        " default uvloop + httptools) at batch 256 and single events",
    )
    parser.add_argument(
        "--baseline-root",
        type=Path,
        help="also A/B a server running another checkout's code (before a change), same DB",
    )
    parser.add_argument(
        "--granian",
        action="store_true",
        help="also A/B granian (ASGI, uvloop, HTTP/1) against uvicorn, same code and workers",
    )
    parser.add_argument("--rounds", type=int, default=2, help="A/B rounds, taken in turns")
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=0,
        help="run the server with persistent database connections (CONN_MAX_AGE seconds)",
    )
    args = parser.parse_args()

    setup_django(durable=True)
    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.tokens import issue_token

    token = issue_token(project=default_project(), name="bench", scopes=["ingest", "read"])[1]
    port = _free_port()
    server = start_server(port, args.workers, args.conn_max_age)
    sizes = [int(s) for s in args.sizes.split(",")]
    misses: list[str] = []
    try:
        copy_rate = bench_copy(args.events)
        print(f"raw COPY:                {copy_rate:>10,.0f} events/s")
        # The ledger alone at each batch size, so each API figure has its own baseline.
        ledger_rates = {size: bench_ledger(args.events, size) for size in sizes}
        for size, rate in ledger_rates.items():
            print(f"ledger only (batch {size:>3}): {rate:>10,.0f} events/s")
        print(
            f"API: uvicorn --workers {args.workers}, {args.clients} client connections,"
            f" CONN_MAX_AGE={args.conn_max_age}"
        )
        cold = warm_up(port, token, args.workers)
        print(
            f"the first appends after the start: the slowest took {cold:,.0f} ms (measured after)"
        )
        figure("slowest of the first appends after a server start", cold, "ms")
        for size in sizes:
            result = bench_api(port, token, args.events, size, args.clients)
            print(
                f"batch {size:>4}: {result['rate']:>10,.0f} events/s"
                f"  p50 {result['p50']:6.2f} ms  p99 {result['p99']:6.2f} ms"
                f"  ({result['rate'] / ledger_rates[size]:.0%} of the ledger at this batch size,"
                f" {result['rate'] / copy_rate:.0%} of COPY)"
            )
            if size == 256 and result["rate"] < TARGET_BATCH_256_RATE:
                misses.append(f"batch 256 {result['rate']:,.0f} < {TARGET_BATCH_256_RATE:,} ev/s")
            if size == 256:
                figure("ledger in-process, batch 256", ledger_rates[size], "events/s")
                figure(
                    f"HTTP ingest, batch 256 x {args.clients} clients",
                    result["rate"],
                    "events/s",
                    goal=f">= {GOAL_HTTP_SHARE:.0%} of the ledger",
                    baseline=("ledger in-process", ledger_rates[size]),
                    ok=result["rate"] >= GOAL_HTTP_SHARE * ledger_rates[size],
                )
        single = bench_api(port, token, args.single_events, 1, 1)
        print(
            f"batch    1, 1 client: {single['rate']:>7,.0f} events/s"
            f"  p50 {single['p50']:6.2f} ms  p99 {single['p99']:6.2f} ms"
        )
        if single["p99"] > TARGET_SINGLE_P99_MS:
            misses.append(f"single-event p99 {single['p99']:.1f} > {TARGET_SINGLE_P99_MS} ms")
        figure("single-event append p50, 1 client", single["p50"], "ms")
        figure(
            "single-event append p99, 1 client",
            single["p99"],
            "ms",
            goal=f"<= {GOAL_SINGLE_P99_MS:g} ms",
            ok=single["p99"] <= GOAL_SINGLE_P99_MS,
        )
        sse = bench_sse(port, token, args.sse_appends)
        print(
            f"append -> SSE from the request's send: p50 {sse['p50']:.2f} ms"
            f"  p95 {sse['p95']:.2f} ms  ({sse['lost']:.0f} of {args.sse_appends} not received);"
            f" from its response: p50 {sse['response_p50']:.2f} ms"
            f"  p95 {sse['response_p95']:.2f} ms"
        )
        if sse["p95"] > TARGET_SSE_P95_MS or sse["lost"]:
            misses.append(f"append->SSE p95 {sse['p95']:.1f} > {TARGET_SSE_P95_MS} ms or lost")
    finally:
        stop_server(server)
    compared = args.ab or args.baseline_root or args.granian
    variants = [Variant("this checkout", ROOT)] if compared else []
    # Variants in turns, after the figures above; the first is what the others are compared to.
    if args.ab:
        variants.append(Variant("asyncio + h11", ROOT, ("--loop", "asyncio", "--http", "h11")))
    if args.granian:
        variants.append(Variant("granian", ROOT, server="granian"))
    if args.baseline_root:
        variants.append(Variant("baseline checkout", args.baseline_root.resolve()))
    if variants:
        # The ledger's rate before and after the A/B: the share each variant keeps of it.
        before = ledger_rates[256] if 256 in ledger_rates else bench_ledger(args.events, 256)
        ledger_rate = statistics.mean([before, bench_ledger(args.events, 256)])
        bench_ab(args, token, variants, ledger_rate)
    print("targets: " + ("all met" if not misses else "MISSED: " + "; ".join(misses)))


if __name__ == "__main__":
    main()
