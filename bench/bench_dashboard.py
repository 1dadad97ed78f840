"""Server time of the project dashboard and its stats API at 10k and 100k runs, and the ratio.

Seeds a throwaway embedded PostgreSQL (or DATABASE_URL) as bench_scale.py does (its seeder:
threads of 10 committed runs and 20 messages, one thread a minute from 2025-01-01), first
--threads/10 threads, measuring, then --threads, measuring again. Figures: the dashboard page
and the API over a 7-day window, a 30-day one and a year (every run), by a member and a read
token; the project page is the baseline (it reads nothing of the runs). p50 and p95 of --repeat
requests after two warm-ups; the ratio is the large store's p50 over the small one's.
Goal: p95 <= 300 ms at 2,000,000 messages (100,000 threads: `--threads 100000`).

    .venv/bin/python bench/bench_dashboard.py                   # 10k and 100k runs
    .venv/bin/python bench/bench_dashboard.py --threads 100000  # 100k and 1M runs, 2M messages
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django

TARGET_MS = 300.0
# Custom windows inside the seeded dates (the seeder starts on 2025-01-01).
WINDOWS = {
    "7 days": "window=custom&from=2025-01-01&to=2025-01-07",
    "30 days": "window=custom&from=2025-01-01&to=2025-01-30",
    "a year": "window=custom&from=2025-01-01&to=2025-12-31",
}


def cases(slug: str) -> list[tuple[str, str, str]]:
    """(label, url, who) of every figure: the baseline first."""
    found = [("baseline: project page", f"/p/{slug}/", "member")]
    for name, query in WINDOWS.items():
        found.append((f"dashboard page: {name}", f"/p/{slug}/dashboard/?{query}", "member"))
        api_query = query.replace("window=custom&", "")
        found.append((f"stats API: {name}", f"/api/v1/projects/{slug}/stats?{api_query}", "api"))
    return found


def fetcher(clients: dict[str, Any], url: str, who: str) -> Callable[[], Any]:
    """A GET of url by who that must answer 200."""
    client, headers = clients[who]

    def get() -> Any:
        response = client.get(url, headers=headers)
        assert response.status_code == 200, (url, response.status_code)
        return response.content

    return get


def measure_all(clients: dict[str, Any], slug: str, repeat: int) -> dict[str, Any]:
    """Every figure, printed as measured."""
    from bench_scale import measure

    figures = {}
    for label, url, who in cases(slug):
        figure = measure(fetcher(clients, url, who), repeat)
        figures[label] = figure
        print(
            f"  {label:<32} p50 {figure.p50:8.1f} ms  p95 {figure.p95:8.1f} ms"
            f"  {figure.queries:3} queries {figure.db_ms:8.1f} ms",
            flush=True,
        )
    return figures


def report(small: dict[str, Any], full: dict[str, Any], runs: tuple[int, int]) -> None:
    """The table: both sizes, the ratio, the ratio over the baseline's, the goal."""
    base = full["baseline: project page"].p50 / small["baseline: project page"].p50
    header = (
        f"{'figure':<32} {f'{runs[0]:,} runs p50':>16} {'p95':>8} {f'{runs[1]:,} runs p50':>18}"
        f" {'p95':>8} {'ratio':>6} {'÷ base':>7}  goal"
    )
    print()
    print(header)
    print("-" * len(header))
    missed = 0
    for label, big in full.items():
        little = small[label]
        ratio = big.p50 / little.p50 if little.p50 else float("inf")
        ok = big.p95 <= TARGET_MS
        missed += not ok
        print(
            f"{label:<32} {little.p50:>16.1f} {little.p95:>8.1f} {big.p50:>18.1f}"
            f" {big.p95:>8.1f} {ratio:>6.2f} {ratio / base:>7.2f}  {'ok' if ok else 'MISSED'}"
        )
    print()
    print(
        f"goal: p95 <= {TARGET_MS:.0f} ms at {runs[1]:,} runs: "
        + ("every figure met it" if not missed else f"{missed} figure(s) missed it")
    )
    print(f"baseline ratio (project page, reads no run): {base:.2f}")
    medians = [full[k].p50 / small[k].p50 for k in full if k.startswith("dashboard")]
    print(f"median dashboard ratio: {statistics.median(medians):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000, help="threads at full size")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    setup_django()
    from bench_scale import grow
    from django.contrib.auth import get_user_model
    from django.test import Client
    from scale_seed import RUNS_PER_THREAD, Seeder

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.projects import set_member
    from transcripts.ledger.tokens import issue_token

    project = default_project()
    member = get_user_model().objects.create_user("bench")
    set_member(project=project, user=member, role="viewer")
    _, token = issue_token(name="bench", scopes=["read"], project=project)
    member_client = Client()
    member_client.force_login(member)
    clients = {
        "member": (member_client, {}),
        "api": (Client(), {"Authorization": f"Bearer {token}"}),
    }
    seeder = Seeder(project_id=project.pk, reporter_id=member.pk)
    sizes = (max(1, args.threads // 10), args.threads)
    figures = []
    for size in sizes:
        print(f"seeding up to {size:,} threads", flush=True)
        grow(seeder, upto=size, specials=0)
        print(f"measuring at {size:,} threads ({size * RUNS_PER_THREAD:,} runs)", flush=True)
        figures.append(measure_all(clients, project.slug, args.repeat))
    report(figures[0], figures[1], (sizes[0] * RUNS_PER_THREAD, sizes[1] * RUNS_PER_THREAD))


if __name__ == "__main__":
    main()
