"""Exports that write as they read (issue 30): first byte, last byte and memory, before → after.

Seeds a 5,000-message thread (2,500 turns, three edit branches) and a 50,000-message one
(one edit branch) with the scale benchmark's bulk writer, then:

1. Over HTTP: two uvicorn servers (one worker each) on the same database, "before" running
   the code of the commit before exports streamed (a `git archive` of it in a temporary
   folder) and "after" this tree; --repeat GETs of /api/v1/threads/{id}/export for canonical,
   ThreadProtocol and ThreadProtocol with every branch (JSON Lines), taking turns between the
   servers, each timed from the moment its request is sent to the first and to the last byte
   of the body (p50/p95).
2. In process: the peak memory (tracemalloc) of writing each export whole (`export_thread`,
   still the command line's path) and streamed (`stream_thread` + `chunked`, every chunk
   dropped as a client would take it), at 5,000 and 50,000 messages.

Goals: first byte <= 50 ms, the 5,000-message thread in full <= 150 ms p95 (canonical,
ThreadProtocol, JSON Lines); memory flat in the thread's size (all three).

    .venv/bin/python bench/bench_export.py [--repeat 20] [--before REF] [--no-memory]
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import ROOT, setup_django

GOAL_FIRST_MS = 50.0
GOAL_FULL_P95_MS = 150.0
CASES = {
    "canonical": "format=canonical",
    "threadprotocol": "format=threadprotocol",
    "JSON Lines": "format=threadprotocol&branches=all",
}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _before_ref() -> str:
    """The commit before exports streamed: the parent of the one adding export_stream.py."""
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--",
         "transcripts/interchange/export_stream.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not added:
        raise SystemExit("export_stream.py is not committed: pass --before REF")
    return f"{added[-1]}^"


def _checkout(ref: str) -> Path:
    """The tree of ref in a temporary folder (no worktree: a plain copy)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-export-before-"))
    archive = subprocess.run(
        ["git", "archive", ref], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _start(port: int, tree: Path) -> subprocess.Popen[bytes]:
    """uvicorn serving the code of tree (one worker, DEBUG off) on the benchmark's database."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "benchmark-only"),
        "LOG_LEVEL": "ERROR",
        "TRANSCRIPTS_LOG_LEVEL": "ERROR",
    }
    command = [
        sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
        "--port", str(port), "--workers", "1", "--lifespan", "off", "--log-level", "warning",
        "--no-access-log",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=tree, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, path: str, token: str) -> tuple[float, float, int]:
    """(ms to the first body byte, ms to the last, bytes) of one GET on a new connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    started = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    first = response.read(1)
    first_at = time.perf_counter()
    size = len(first) + len(response.read())
    done = time.perf_counter()
    conn.close()
    if response.status != 200 or not first:
        raise RuntimeError(f"{path}: {response.status}")
    return (first_at - started) * 1000, (done - started) * 1000, size


def _seed(turns: int, alternatives: int, title: str) -> str:
    from django.contrib.auth import get_user_model
    from scale_seed import Seeder, special_thread

    from transcripts.ledger.default_project import default_project

    users = get_user_model().objects
    reporter = users.filter(username="bench").first() or users.create_user("bench")
    seeder = Seeder(project_id=default_project().pk, reporter_id=reporter.pk)
    return special_thread(seeder, title=title, turns=turns, alternatives=alternatives)


def _peak(write: Callable[[], Any]) -> float:
    """The peak memory (MB) tracemalloc sees while write runs."""
    import gc

    gc.collect()
    tracemalloc.start()
    try:
        write()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _memory(threads: dict[int, str]) -> None:
    from transcripts import interchange
    from transcripts.models import Thread

    params: dict[str, tuple[str, str | None]] = {
        "canonical": ("canonical", None),
        "threadprotocol": ("threadprotocol", None),
        "JSON Lines": ("threadprotocol", "all"),
    }
    for case, kwargs in params.items():
        peaks: dict[tuple[str, int], float] = {}
        for size, thread_id in threads.items():
            thread = Thread.objects.get(pk=thread_id)

            def whole(thread: Thread = thread, kwargs: tuple[str, str | None] = kwargs) -> None:
                exported = interchange.export_thread(thread, kwargs[0], branches=kwargs[1])
                for _ in interchange.chunks(exported.content):
                    pass

            def streamed(thread: Thread = thread, kwargs: tuple[str, str | None] = kwargs) -> None:
                exported = interchange.stream_thread(thread, kwargs[0], branches=kwargs[1])
                for _ in interchange.chunked(exported.pieces):
                    pass

            peaks["whole", size] = _peak(whole)
            peaks["streamed", size] = _peak(streamed)
            print(
                f"{case}, {size:,} messages: peak {peaks['whole', size]:,.1f} MB whole, "
                f"{peaks['streamed', size]:,.1f} MB streamed",
                flush=True,
            )
        small, big = sorted(threads)
        growth = peaks["streamed", big] / peaks["streamed", small]
        figure(
            f"export {case}: peak memory streamed, {big:,} messages",
            peaks["streamed", big],
            "MB",
            goal=f"flat: <= 2x the {small:,}-message thread's",
            ok=growth <= 2,
            baseline=(f"whole, {big:,} messages", peaks["whole", big]),
            note=f"{small:,} messages: {peaks['streamed', small]:.1f} MB streamed, "
            f"{peaks['whole', small]:.1f} MB whole",
        )


def _http(thread_id: str, token: str, repeat: int, before_tree: Path) -> None:
    from bench_api import stop_server

    ports = {"before": _free_port(), "after": _free_port()}
    servers = {"before": _start(ports["before"], before_tree)}
    servers["after"] = _start(ports["after"], ROOT)
    try:
        for case, query in CASES.items():
            path = f"/api/v1/threads/{thread_id}/export?{query}"
            times: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
            for name in ports:  # warm up: imports, caches, plans
                _get(ports[name], path, token)
            for _ in range(repeat):
                for name, port in ports.items():
                    times[name].append(_get(port, path, token))
            sizes = {name: times[name][0][2] for name in times}
            if sizes["before"] != sizes["after"]:
                raise RuntimeError(f"{case}: {sizes} bytes before and after")
            stats = {}
            for name, rows in times.items():
                firsts = [row[0] for row in rows]
                fulls = [row[1] for row in rows]
                stats[name] = (
                    _percentile(firsts, 0.5),
                    _percentile(firsts, 0.95),
                    _percentile(fulls, 0.5),
                    _percentile(fulls, 0.95),
                )
                print(
                    f"{case} ({sizes[name] / 1e6:.1f} MB) {name}: first byte p50 "
                    f"{stats[name][0]:.0f} ms p95 {stats[name][1]:.0f} ms; full p50 "
                    f"{stats[name][2]:.0f} ms p95 {stats[name][3]:.0f} ms",
                    flush=True,
                )
            figure(
                f"export {case}, 5,000 messages: first byte p95",
                stats["after"][1],
                "ms",
                goal=f"<= {GOAL_FIRST_MS:.0f} ms",
                ok=stats["after"][1] <= GOAL_FIRST_MS,
                baseline=("before (whole document)", stats["before"][1]),
            )
            figure(
                f"export {case}, 5,000 messages: full p95",
                stats["after"][3],
                "ms",
                goal=f"<= {GOAL_FULL_P95_MS:.0f} ms",
                ok=stats["after"][3] <= GOAL_FULL_P95_MS,
                baseline=("before (whole document)", stats["before"][3]),
            )
    finally:
        for process in servers.values():
            stop_server(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=20, help="requests per case and server")
    parser.add_argument("--before", help="the commit to compare with (default: the one before)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory figures")
    args = parser.parse_args()
    before_tree = _checkout(args.before or _before_ref())
    setup_django()
    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.tokens import issue_token

    started = time.perf_counter()
    small = _seed(2_500, 3, "5,000 messages")
    big = _seed(25_000, 1, "50,000 messages") if not args.no_memory else ""
    print(f"seeded in {time.perf_counter() - started:.1f} s", flush=True)
    _, token = issue_token(name="bench", scopes=["read"], project=default_project())
    print(f"load: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    _http(small, token, args.repeat, before_tree)
    if not args.no_memory:
        _memory({5_000: small, 50_000: big})


if __name__ == "__main__":
    main()
