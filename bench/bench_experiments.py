"""Experiments at scale (issue 29 item 9): N threads replayed by real worker processes.

Seeds the largest --threads count of short conversations (two turns each, the last message an
assistant's answer; COPY, as bench/scale_seed.py does), starts uvicorn and --workers
`manage.py worker` processes on a throwaway PostgreSQL, measures plain regenerations first
(--batch runs queued at once: the baseline pace), then for each thread count and each
--concurrency makes an experiment on the first N threads through
`transcripts.generation.experiments.create` (demo generator, model demo-brief, delayMs 0, the
deterministic evaluators) and prints the creation time, the time to completed (creation
included) and items/s. Meanwhile a viewer (another user) loads the thread list through
uvicorn: its p95 idle and while the experiment runs. At the largest count, the results page
(`/p/<slug>/experiments/<id>/`, once it exists) and `GET /api/v1/experiments/{id}` are timed.

Goals: 1,000 threads <= 40 s (>= 25 items/s); 10,000 threads <= 7 min; the list's p95 while
an experiment runs <= 1.5x idle; the results page <= 300 ms p95 at 10,000 rows.

    .venv/bin/python bench/bench_experiments.py [--threads 1000,10000] [--concurrency 4,8]
        [--workers 2] [--batch 100] [--requests 50] [--profile DIR] [--nice N] [--explain]

--profile DIR runs the workers under cProfile (one .prof file per worker in DIR, written when
they stop); --nice N runs them at that niceness.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_generation import _free_port, _login, _pct, _start, _wait_up

PASSWORD = "bench-password"
EVALUATORS = ("exact-match", "length-ratio", "json", "tool-calls")


# --- the store ---------------------------------------------------------------------------------


def seed(count: int, project_id: int, reporter_id: int) -> list[str]:
    """count two-turn conversations, oldest first, with their counters; their ids."""
    from django.db import connection
    from scale_copy import Batch, write_all
    from scale_seed import START, Seeder

    from transcripts.ledger.counters import RECOUNT_SQL, recount_sql_params

    seeder = Seeder(project_id=project_id, reporter_id=reporter_id)
    ids: list[str] = []

    def batches() -> Iterator[tuple[Batch, int]]:
        for start in range(0, count, 1000):
            batch = Batch()
            for serial in range(start, min(start + 1000, count)):
                ids.append(
                    seeder.conversation(
                        batch,
                        when=START + timedelta(seconds=serial * 60),
                        turns=2,
                        title=f"Support {serial}",
                        serial=serial,
                    )
                )
            yield batch, seeder.threads_written

    started = time.perf_counter()
    for _ in write_all(batches()):
        pass
    with connection.cursor() as cursor:
        # The seeder hides and locks a few threads, as a real store has: not these.
        cursor.execute("UPDATE transcripts_thread SET hidden = false, locked = false")
        cursor.execute(RECOUNT_SQL, recount_sql_params(None, cursor))
        cursor.execute("VACUUM (ANALYZE)")
    print(f"seeded {count:,} threads in {time.perf_counter() - started:.1f} s", flush=True)
    return ids


def evaluators() -> list[dict[str, str]]:
    """The deterministic evaluators this branch's check_evaluators accepts."""
    from transcripts.errors import InvalidInput
    from transcripts.generation.evaluators import check_evaluators

    accepted = []
    for kind in EVALUATORS:
        try:
            check_evaluators([{"type": kind}])
        except InvalidInput:
            continue
        accepted.append({"type": kind})
    return accepted


# --- timing pages --------------------------------------------------------------------------------


def p95_of(client: httpx.Client, url: str, requests: int) -> float:
    """p95 in ms of requests GETs of url (each must answer 200)."""
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return _pct(times, 0.95)


class Sampler:
    """GETs of url in the background until stopped; the p95 of those made."""

    def __init__(self, client: httpx.Client, url: str, requests: int) -> None:
        self.client, self.url, self.requests = client, url, requests
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set() and len(self.times) < self.requests:
            started = time.perf_counter()
            response = self.client.get(self.url)
            if response.status_code == 200:
                self.times.append((time.perf_counter() - started) * 1000)
            self._stop.wait(0.1)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def p95(self) -> float:
        return _pct(self.times, 0.95)


def explain(thread_ids: list[str]) -> None:
    """EXPLAIN ANALYZE the two queries of fork_points on the threads, and time it."""
    from django.db import connection

    from transcripts.ids import to_uuid
    from transcripts.selectors import experiments as reads

    uuids = [to_uuid(t) for t in thread_ids]
    started = time.perf_counter()
    points = reads.fork_points(thread_ids, "last-user")
    print(f"fork_points of {len(thread_ids):,} threads: {time.perf_counter() - started:.2f} s")
    depths = [0] * len(uuids)
    queries: list[tuple[str, dict[str, list[UUID] | list[int]]]] = [
        (reads._ACTIVE_USER_MESSAGES, {"threads": uuids}),
        (reads._AFTER, {"threads": uuids, "depths": depths}),
    ]
    for sql, params in queries:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            print("\n".join(row[0][:160] for row in cursor.fetchall()), flush=True)
    assert len(points) == len(thread_ids)


def resolves(path: str) -> bool:
    """Whether path is a URL of this branch."""
    from django.urls import Resolver404, resolve

    try:
        resolve(path)
    except Resolver404:
        return False
    return True


# --- the runs ------------------------------------------------------------------------------------


def baseline(thread_id: str, batch: int) -> float:
    """Plain regenerations: batch runs queued at once; runs/s the workers complete."""
    from transcripts.generation.start import start_generation
    from transcripts.models import Message, Run, Thread

    thread = Thread.objects.get(pk=thread_id)
    answer = Message.objects.get(pk=thread.head_id)
    started = time.perf_counter()
    pending = {
        start_generation(thread=thread, fork_from=answer.parent_id, parameters={"delayMs": 0}).id
        for _ in range(batch)
    }
    while pending:
        pending = set(
            Run.objects.filter(pk__in=pending, status__in=["queued", "streaming"]).values_list(
                "pk", flat=True
            )
        )
        time.sleep(0.05)
    return batch / (time.perf_counter() - started)


def run_experiment(
    thread_ids: list[str], concurrency: int, author: object, sampler: Sampler
) -> tuple[str, float, float]:
    """Make an experiment on thread_ids and wait for it to complete: (id, seconds to create,
    seconds to completed, creation included)."""
    from transcripts.generation import experiments
    from transcripts.generation.experiments import ExperimentRequest
    from transcripts.ledger.default_project import default_project
    from transcripts.models import Experiment, ExperimentStatus
    from transcripts.selectors.experiments import progress

    request = ExperimentRequest(
        name=f"bench {len(thread_ids)} x{concurrency}", generator="demo", model="demo-brief",
        parameters={"delayMs": 0}, thread_ids=tuple(thread_ids), evaluators=evaluators(),
        concurrency=concurrency,
    )  # fmt: skip
    started = time.perf_counter()
    experiment, _ = experiments.create(
        project=default_project(),
        author=author,  # type: ignore[arg-type]
        request=request,
    )
    created = time.perf_counter() - started
    with sampler:
        last = time.perf_counter()
        while Experiment.objects.get(pk=experiment.pk).status != ExperimentStatus.COMPLETED:
            if time.perf_counter() - last > 15:
                last = time.perf_counter()
                print(f"    {progress(experiment).as_json()}", flush=True)
            time.sleep(0.1)
    total = time.perf_counter() - started
    counts = progress(experiment).as_json()
    if counts["done"] != len(thread_ids):
        errors = Counter(
            str((e or {}).get("message"))[:1500]
            for e in experiment.items.exclude(status="done").values_list("error", flat=True)
        )
        print(f"    NOT ALL DONE: {counts}; errors {dict(errors)}", flush=True)
    return experiment.id, created, total


def goal(label: str, value: float, limit: float, unit: str, *, at_least: bool = False) -> None:
    """One figure against its goal, with the ratio."""
    met = value >= limit if at_least else value <= limit
    ratio = value / limit if limit else float("nan")
    sign = ">=" if at_least else "<="
    print(
        f"  {label:<44} {value:9.2f} {unit:<6} goal {sign} {limit:.2f} {unit}"
        f"  ({ratio:.2f}x of goal) {'ok' if met else 'MISSED'}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", default="1000,10000")
    parser.add_argument("--concurrency", default="4,8")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--profile", default="")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN the fork points")
    parser.add_argument("--nice", type=int, default=0, help="the workers' niceness")
    args = parser.parse_args()
    sizes = [int(n) for n in args.threads.split(",")]
    levels = [int(n) for n in args.concurrency.split(",")]
    setup_django()  # as bench_generation.py: the baseline's settings
    from django.contrib.auth import get_user_model

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member
    from transcripts.ledger.scores import Author

    project = default_project()
    users = get_user_model().objects
    editor = users.create_user("bench-editor", password=PASSWORD)
    viewer = users.create_user("bench-viewer", password=PASSWORD)
    set_member(project=project, user=editor, role="editor")
    set_member(project=project, user=viewer, role="viewer")
    thread_ids = seed(max(sizes), project.pk, viewer.pk)
    if args.explain:
        explain(thread_ids)
        return

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost"}
    python = sys.executable
    processes = [
        _start([python, "-m", "uvicorn", "config.asgi:application", "--port", str(port),
                "--workers", "2", "--log-level", "warning", "--lifespan", "off"], env)
    ]  # fmt: skip
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    niced = ["nice", "-n", str(args.nice)] if args.nice else []
    for n in range(args.workers):
        profile = ["-m", "cProfile", "-o", f"{args.profile}/worker{n}.prof"] if args.profile else []
        processes.append(
            _start([*niced, python, *profile, "manage.py", "worker", "--interval", "0.05",
                    "--no-reload", "--no-startup-delay", "-v", "0"], env)
        )  # fmt: skip
    try:
        _wait_up(base)
        client = _login(base, "bench-viewer", PASSWORD)
        measure(args, client, thread_ids, sizes, levels, Author(user=editor), project.slug)
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)


def measure(
    args: argparse.Namespace,
    client: httpx.Client,
    thread_ids: list[str],
    sizes: list[int],
    levels: list[int],
    author: object,
    slug: str,
) -> None:
    """The baseline, then each experiment, then the results page; each figure with its goal."""
    client.get("/")  # warm
    idle = p95_of(client, "/", args.requests)
    print(f"thread list p95 idle ({args.requests} GETs): {idle:.1f} ms", flush=True)
    with Sampler(client, "/", args.requests) as plain:
        pace = baseline(thread_ids[0], args.batch)  # runs/s
    print(f"baseline: {args.batch} plain regenerations at {pace:.1f} runs/s", flush=True)
    print(
        f"  list p95 while they run ({len(plain.times)} GETs): {plain.p95():.1f} ms"
        f" = {plain.p95() / idle:.2f}x idle",
        flush=True,
    )
    print(f"evaluators: {', '.join(e['type'] for e in evaluators())}", flush=True)
    last_id = ""
    for size in sizes:
        for level in levels:
            sampler = Sampler(client, "/", args.requests)
            print(f"experiment: {size:,} threads, concurrency {level}", flush=True)
            last_id, created, total = run_experiment(thread_ids[:size], level, author, sampler)
            limit = 40.0 if size <= 1000 else 420.0 * size / 10_000
            print(f"  creation {created:.2f} s", flush=True)
            goal("total to completed (creation included)", total, limit, "s")
            goal("items/s", size / total, 25.0, "/s", at_least=True)
            # The goal's own yardstick: 25 items/s where plain regenerations ran 63 runs/s.
            goal("items/s / plain regenerations' runs/s", size / total / pace, 25 / 63, "x",
                 at_least=True)  # fmt: skip
            goal(f"list p95 while running ({len(sampler.times)} GETs)", sampler.p95(),
                 1.5 * idle, "ms")  # fmt: skip
            print(f"  list p95 ratio to idle: {sampler.p95() / idle:.2f}x", flush=True)
    results_pages(client, slug, last_id, sizes[-1], args.requests)


def results_pages(client: httpx.Client, slug: str, experiment_id: str, rows: int, n: int) -> None:
    """The results page's and the API's p95 on the last experiment, where this branch has them."""
    pages = [
        ("results page", f"/p/{slug}/experiments/{experiment_id}/"),
        ("GET /api/v1/experiments/{id}", f"/api/v1/experiments/{experiment_id}"),
    ]
    for label, url in pages:
        if not resolves(url):
            print(f"{label}: not in this branch", flush=True)
            continue
        status = client.get(url).status_code
        if status != 200:
            print(f"{label}: {status} for the viewer", flush=True)
            continue
        goal(f"{label} p95 at {rows:,} rows", p95_of(client, url, n), 300.0, "ms")


if __name__ == "__main__":
    main()
