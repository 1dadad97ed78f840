"""Regenerate from the browser to tokens on an SSE subscriber, with real worker processes.

Starts uvicorn (config.asgi, DEBUG off) and --workers generation workers on a throwaway
PostgreSQL, logs in like a browser, and --runs times POSTs Regenerate (demo generator at full
speed). For each run it measures, from the POST: the first token seen on an SSE subscriber of
/api/v1/runs/<id>/stream and the final status event (commit); and from the database: the
worker's pick-up latency (started - created) and first token after pick-up (first event -
started). Then it queues --batch runs at once and prints how many runs per second the workers
complete. Targets: first token <= 100 ms p95 after pick-up; pick-up <= 200 ms p95.

    .venv/bin/python bench/bench_generation.py [--runs 50] [--workers 2] [--batch 100]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import ROOT, setup_django

CONTENT = {"text-delta", "reasoning", "tool-call"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_up(url: str) -> None:
    for _ in range(200):
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not start")


def _login(base: str, username: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    client.get("/accounts/login/")
    token = client.cookies["csrftoken"]
    response = client.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": base + "/accounts/login/"},
    )
    assert response.status_code == 302, response.text[:300]
    return client


def _watch(client: httpx.Client, run_id: str, started: float) -> tuple[float, float]:
    """Seconds from `started` to the first content event and to the final status event."""
    first = float("nan")
    with client.stream("GET", f"/api/v1/runs/{run_id}/stream", timeout=60) as response:
        kind = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                now = time.perf_counter()
                if kind in CONTENT and first != first:
                    first = now - started
                if kind == "status":
                    return first, now - started
    return first, float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    setup_django()
    from django.contrib.auth import get_user_model

    from transcripts import ledger
    from transcripts.generation.start import start_generation
    from transcripts.ledger.default_project import default_project
    from transcripts.models import Message, Run

    get_user_model().objects.create_superuser("bench", "bench@localhost", "bench-password")
    thread, _ = ledger.create_thread(project=default_project(), title="bench")
    for kind, data in (
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Tell me a story"}]}),
        ("text-delta", {"delta": "Once upon a time."}),
    ):
        run, _ = ledger.begin_run(thread=thread)
        ledger.append_events(run=run, events=[{"seq": 1, "kind": kind, "data": data}])
        ledger.commit_run(run=run)
    answer = Message.objects.get(thread=thread, role="assistant", active=True)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost"}
    python = sys.executable
    processes = [
        _start(
            [
                python,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--port",
                str(port),
                "--workers",
                "2",
                "--log-level",
                "warning",
                "--lifespan",
                "off",
            ],
            env,
        )
    ]
    for _ in range(args.workers):
        processes.append(
            _start(
                [
                    python,
                    "manage.py",
                    "worker",
                    "--interval",
                    "0.05",
                    "--no-reload",
                    "--no-startup-delay",
                    "-v",
                    "0",
                ],
                env,
            )
        )
    try:
        _wait_up(base)
        client = _login(base, "bench", "bench-password")
        url = f"/t/{thread.id}/m/{answer.id}/regenerate/"
        form = {"generator": "demo", "delayMs": "0"}
        to_first, to_commit, ids = [], [], []
        for _ in range(args.runs):
            headers = {"X-CSRFToken": client.cookies["csrftoken"], "Referer": base + "/"}
            started = time.perf_counter()
            response = client.post(url, data=form, headers=headers)
            match = re.search(r"#run-([0-9A-Z]{26})", response.headers.get("Location", ""))
            assert response.status_code in (302, 303) and match, response.text[:300]
            first, commit = _watch(client, match.group(1), started)
            to_first.append(first * 1000)
            to_commit.append(commit * 1000)
            ids.append(match.group(1))
        runs = list(Run.objects.filter(pk__in=ids))
        pickup = [
            (r.started_at - r.created_at).total_seconds() * 1000 for r in runs if r.started_at
        ]
        first_after = [
            (r.first_event_at - r.started_at).total_seconds() * 1000
            for r in runs
            if r.first_event_at and r.started_at
        ]
        print(f"{args.runs} regenerations, {args.workers} workers, demo generator at full speed")
        print(f"{'measure (ms)':<42} {'p50':>8} {'p95':>8}")
        for label, values in (
            ("POST -> first token on the SSE subscriber", to_first),
            ("POST -> commit (final status event)", to_commit),
            ("pick-up: queued -> worker started", pickup),
            ("first token after pick-up (stored)", first_after),
        ):
            print(f"{label:<42} {_pct(values, 0.5):>8.1f} {_pct(values, 0.95):>8.1f}")
        print(f"statuses: {sorted({r.status for r in runs})}")

        started = time.perf_counter()
        batch = [
            start_generation(thread=thread, fork_from=answer.parent_id, parameters={"delayMs": 0})
            for _ in range(args.batch)
        ]
        pending = {r.id for r in batch}
        while pending:
            pending = set(
                Run.objects.filter(pk__in=pending, status__in=["queued", "streaming"]).values_list(
                    "pk", flat=True
                )
            )
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        print(
            f"throughput: {args.batch} runs in {elapsed:.1f}s = {args.batch / elapsed:.1f} runs/s"
        )
        print("targets: first token after pick-up p95 <= 100 ms; pick-up p95 <= 200 ms")
        print(json.dumps({"median_first_token_ms": statistics.median(to_first)}))
        figure("Regenerate POST → first token on SSE, p95", _pct(to_first, 0.95), "ms")
        figure("Regenerate POST → commit, p95", _pct(to_commit, 0.95), "ms")
        figure(
            "pick-up: queued → worker started, p95",
            _pct(pickup, 0.95),
            "ms",
            goal="<= 200 ms",
            ok=_pct(pickup, 0.95) <= 200,
        )
        figure(
            "first token after pick-up, p95",
            _pct(first_after, 0.95),
            "ms",
            goal="<= 100 ms",
            ok=_pct(first_after, 0.95) <= 100,
        )
        figure(f"throughput, {args.workers} workers", args.batch / elapsed, "runs/s")
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(timeout=20)


if __name__ == "__main__":
    main()
