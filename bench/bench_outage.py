"""A database outage as users feel it: how fast requests are refused, and how fast work resumes.

Starts the fault tests' world (tests/faults/stack.py: a PostgreSQL of its own, migrated and
seeded, uvicorn with DEBUG off and the connection pool on, one generation worker). It times
--rounds of each request from the moment it is sent, first with the database up (the baseline),
then with the database stopped: every answer must be a 503 with Retry-After; the target is
within 2 s. Then it starts the database again and measures how long until /readyz is 200 and
until a Regenerate sent then is committed by the worker that lived through the outage.

    .venv/bin/python bench/bench_outage.py [--rounds 5] [--down 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _record import figure  # noqa: E402

from tests.faults.stack import (  # noqa: E402
    login,
    make_stack,
    regenerate,
    start_server,
    started_run,
    wait_for,
)
from tests.live_server import stop_process  # noqa: E402

TARGET_SECONDS = 2.0


def _timed(send: Callable[[], httpx.Response]) -> tuple[int, float]:
    started = time.perf_counter()
    status = send().status_code
    return status, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="times each request is sent")
    parser.add_argument("--down", type=float, default=3.0, help="seconds the database stays down")
    args = parser.parse_args()

    stack = make_stack()
    server = start_server(stack)
    worker = stack.start_worker()
    try:
        browser = login(server.url, "editor", "editor-password")
        api = httpx.Client(
            base_url=server.url + "/api/v1",
            headers={"Authorization": f"Bearer {stack.token}"},
            timeout=60,
        )
        requests: dict[str, Callable[[], httpx.Response]] = {
            "page: thread list": lambda: browser.get("/"),
            "page: conversation": lambda: browser.get(f"/t/{stack.thread}/"),
            "api: list threads": lambda: api.get("/threads"),
            "api: get thread": lambda: api.get(f"/threads/{stack.thread}"),
            "probe: /readyz": lambda: httpx.get(server.url + "/readyz", timeout=60),
            "probe: /healthz": lambda: httpx.get(server.url + "/healthz", timeout=60),
        }
        up = {name: [_timed(send) for _ in range(args.rounds)] for name, send in requests.items()}

        stack.cluster.stop()
        stopped_at = time.monotonic()
        down = {name: [_timed(send) for _ in range(args.rounds)] for name, send in requests.items()}
        time.sleep(max(0.0, args.down - (time.monotonic() - stopped_at)))
        stack.cluster.start()
        started_at = time.monotonic()
        wait_for(lambda: httpx.get(server.url + "/readyz").status_code == 200, 60, "readyz")
        ready_after = time.monotonic() - started_at
        sent_at = time.monotonic()
        run = started_run(regenerate(browser, stack))
        wait_for(lambda: stack.run_status(run) == "committed", 60, "the regeneration")
        committed_after = time.monotonic() - sent_at
        survived = worker.poll() is None
    finally:
        stop_process(server.process)
        stack.stop_processes()

    print(
        f"{'request':22} {'up: median':>11} {'down: median':>13} {'down: slowest':>14} "
        f"{'vs up':>8} {'statuses down':>14}"
    )
    slowest_overall = 0.0
    for name in requests:
        up_median = statistics.median(s for _, s in up[name])
        down_seconds = [s for _, s in down[name]]
        down_median, slowest = statistics.median(down_seconds), max(down_seconds)
        if "healthz" not in name:  # the liveness probe never touches the database
            slowest_overall = max(slowest_overall, slowest)
        statuses = ",".join(sorted({str(status) for status, _ in down[name]}))
        print(
            f"{name:22} {up_median * 1000:9.1f} ms {down_median * 1000:10.1f} ms"
            f" {slowest * 1000:11.1f} ms {down_median / up_median:7.1f}x {statuses:>14}"
        )
    print(
        f"slowest refusal while down: {slowest_overall:.3f} s "
        f"(target {TARGET_SECONDS:.0f} s: {slowest_overall / TARGET_SECONDS:.2f} of it)"
    )
    print(f"/readyz 200 again {ready_after:.2f} s after the database started")
    print(
        f"a Regenerate sent then committed in {committed_after:.2f} s; "
        f"the worker {'lived through the outage' if survived else 'DIED'}"
    )
    figure(
        "slowest refusal while the database is down",
        slowest_overall,
        "s",
        goal=f"<= {TARGET_SECONDS:.0f} s",
        ok=slowest_overall <= TARGET_SECONDS,
    )
    figure("/readyz 200 after the database started", ready_after, "s")
    figure(
        "Regenerate committed after the outage",
        committed_after,
        "s",
        note="" if survived else "the worker died",
        ok=None if survived else False,
    )


if __name__ == "__main__":
    main()
