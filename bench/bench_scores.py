"""The thread list filtered by judgement (issue 28): 100,000 scores on 10,000 threads.

Seeds a throwaway embedded PostgreSQL (or DATABASE_URL) with --threads threads as
bench_scale.py does (10 committed runs, 20 messages each), then --scores scores on their
answers with bulk_create (helpfulness 1-5 on half, accuracy 0-1 on a third, policy pass/fail
on the rest, one fail in 500) and a 👍/👎 on one answer in 20 (a third of them down). Starts one
uvicorn process (the production settings) and GETs the thread list as a signed-in viewer over
a keep-alive connection: the unfiltered list (the baseline, in the same run), then filtered by
`score:helpfulness<3`, `feedback:down`, a rare `score:policy=fail`, `unscored`, and sorted by the
Score column, in rounds (each round one request of every case, so load on the machine falls on
all alike). p50/p95 from the moment the request is sent to the last byte of the answer,
after two warm-up rounds; "db ms" is the median time its SQL took (in-process, five GETs). Goal:
every filtered list p95 <= 150 ms.

    .venv/bin/python bench/bench_scores.py [--threads 10000] [--scores 100000] [--repeat 40]
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import signal
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django

TARGET_MS = 150.0
CASES: tuple[tuple[str, dict[str, str]], ...] = (
    ("baseline: the list, unfiltered", {}),
    ("score:helpfulness<3", {"q": "score:helpfulness<3"}),
    ("feedback:down", {"q": "feedback:down"}),
    ("score:policy=fail (rare)", {"q": "score:policy=fail"}),
    ("score:helpfulness<3 feedback:down", {"q": "score:helpfulness<3 feedback:down"}),
    ("unscored", {"q": "unscored"}),
    ("Score column (helpfulness)", {"scoreColumn": "helpfulness"}),
    ("sorted by helpfulness", {"scoreColumn": "helpfulness", "sort": "score"}),
)


def seed_judgement(project_id: int, user_id: int, scores: int) -> tuple[int, int]:
    """scores scores and a feedback on one answer in 20, on the project's answers (bulk_create);
    returns (scores, feedback) written."""
    from transcripts.models import Feedback, Message, Score, ScoreSource

    rng = random.Random(28)
    answers = list(
        Message.objects.filter(thread__project_id=project_id, role="assistant").values_list(
            "id", "thread_id", "run_id"
        )
    )
    rows = []
    for n in range(scores):
        message_id, thread_id, _ = answers[n % len(answers)]
        kind = n % 6
        if kind < 3:
            name, value, label = "helpfulness", float(rng.randint(1, 5)), ""
        elif kind < 5:
            name, value, label = "accuracy", round(rng.random(), 2), ""
        else:
            name, value, label = "policy", None, "fail" if rng.random() < 0.002 else "pass"
        rows.append(
            Score(
                project_id=project_id,
                thread_id=thread_id,
                message_id=message_id,
                name=name,
                value=value,
                label=label,
                source=ScoreSource.EVALUATOR,
            )
        )
    Score.objects.bulk_create(rows, batch_size=5_000)
    feedback = [
        Feedback(thread_id=t, message_id=m, user_id=user_id, up=rng.random() >= 1 / 3)
        for m, t, _ in answers[::20]
    ]
    Feedback.objects.bulk_create(feedback, batch_size=5_000)
    return len(rows), len(feedback)


def _connect(port: int) -> http.client.HTTPConnection:
    """A keep-alive connection with Nagle off."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def timed_rounds(port: int, cookie: str, paths: list[str], repeat: int) -> list[list[float]]:
    """repeat rounds of one GET of each path in turn (after two warm-up rounds), so a burst of
    load on the machine falls on every figure alike; ms from the request sent to the last
    byte, sorted, per path."""
    conn = _connect(port)
    times: list[list[float]] = [[] for _ in paths]
    for n in range(repeat + 2):
        for index, path in enumerate(paths):
            started = time.perf_counter()
            conn.request("GET", path, headers={"Cookie": cookie})
            response = conn.getresponse()
            body = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            assert response.status == 200, (path, response.status, body[:300])
            if n >= 2:
                times[index].append(elapsed)
    conn.close()
    return [sorted(each) for each in times]


def db_ms(client: object, path: str) -> tuple[float, int]:
    """The median over five in-process GETs of path of the time its queries took (ms), and
    how many it ran: the part of a figure the database answers for."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    totals, count = [], 0
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)  # type: ignore[attr-defined]
            assert response.status_code == 200
        totals.append(sum(float(q["time"]) for q in captured.captured_queries) * 1000)
        count = len(captured.captured_queries)
    return sorted(totals)[2], count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--scores", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "127.0.0.1,testserver")
    setup_django()
    from bench_api import _free_port, _percentile, start_server, stop_server
    from bench_live_lists import _member_cookie
    from bench_scale import grow
    from django.contrib.auth import get_user_model
    from django.db import connection
    from scale_seed import Seeder

    from transcripts.ledger.default_project import default_project

    project = default_project()
    cookie, _ = _member_cookie()
    viewer = get_user_model().objects.get(username="bench-live-viewer")
    seeder = Seeder(project_id=project.pk, reporter_id=viewer.pk)
    print(f"seeding {args.threads:,} threads", flush=True)
    grow(seeder, upto=args.threads, specials=0)
    started = time.perf_counter()
    written, feedback = seed_judgement(project.pk, viewer.pk, args.scores)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) transcripts_score, transcripts_feedback")
    print(
        f"seeded {written:,} scores and {feedback:,} feedback in"
        f" {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    from django.test import Client

    local = Client()
    local.force_login(viewer)
    port = _free_port()
    server = start_server(port, 1)
    try:
        print(f"\n{'the thread list':<36} {'p50 ms':>8} {'p95 ms':>8} {'db ms':>7}  goal")
        missed = 0
        paths = ["/" + (f"?{urlencode(params)}" if params else "") for _, params in CASES]
        rounds = timed_rounds(port, cookie, paths, args.repeat)
        for (label, _), path, times in zip(CASES, paths, rounds, strict=True):
            p50, p95 = _percentile(times, 0.5), _percentile(times, 0.95)
            ok = p95 <= TARGET_MS
            missed += not ok
            database, queries = db_ms(local, path)
            print(
                f"{label:<36} {p50:>8.1f} {p95:>8.1f} {database:>7.1f}  {'ok' if ok else 'MISSED'}"
                f"  ({queries} queries)",
                flush=True,
            )
        print(
            f"\ngoal: p95 <= {TARGET_MS:.0f} ms: "
            + ("every figure met it" if not missed else f"{missed} figure(s) missed it")
        )
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
