"""The cost of the API's quotas per request (transcripts/limits.py, ledger/quotas.py).

On a throwaway embedded PostgreSQL with production's crash safety (or DATABASE_URL), sends the
same small API request (GET /api/v1/runs/{id}, a bearer token) in-process, in alternating
rounds with the limiter on and off (TRANSCRIPTS_RATE_LIMITS), and prints the median time per
request of each and their difference; then the time of the charge statement alone.
Target: the limiter adds <= 0.3 ms a request.

    .venv/bin/python bench/bench_limits.py [--requests 2000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django

TARGET_MS = 0.3


def _per_request_ms(send: object, count: int) -> float:
    """Milliseconds a call of send takes, on average over count calls."""
    assert callable(send)
    start = time.perf_counter()
    for _ in range(count):
        send()
    return (time.perf_counter() - start) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=10, help="rounds with and without")
    args = parser.parse_args()
    setup_django(durable=True)

    from django.test import Client, override_settings

    from transcripts import ledger
    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.quotas import charge
    from transcripts.ledger.tokens import issue_token
    from transcripts.models import ApiToken

    project = default_project()
    _, raw = issue_token(name="bench-limits", scopes=["read", "ingest"], project=project)
    thread, _ = ledger.create_thread(project=project, title="bench limits")
    run, _ = ledger.begin_run(thread=thread, model="bench-model")
    client = Client(HTTP_HOST="localhost")
    headers = {"Authorization": f"Bearer {raw}"}
    path = f"/api/v1/runs/{run.id}"

    def send() -> None:
        response = client.get(path, headers=headers)
        assert response.status_code == 200, response.content[:200]

    # Far from any limit: the bench measures the counting, not refusals.
    generous = {
        "TRANSCRIPTS_TOKEN_REQUESTS_PER_MINUTE": 10**9,
        "TRANSCRIPTS_PROJECT_REQUESTS_PER_MINUTE": 10**9,
    }
    on: list[float] = []
    off: list[float] = []
    for _ in range(args.requests // 10):  # warm up both paths
        with override_settings(TRANSCRIPTS_RATE_LIMITS=True, **generous):
            send()
        with override_settings(TRANSCRIPTS_RATE_LIMITS=False):
            send()
    for _ in range(args.rounds):
        with override_settings(TRANSCRIPTS_RATE_LIMITS=False):
            off.append(_per_request_ms(send, args.requests))
        with override_settings(TRANSCRIPTS_RATE_LIMITS=True, **generous):
            on.append(_per_request_ms(send, args.requests))
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    with override_settings(TRANSCRIPTS_RATE_LIMITS=True, **generous):
        alone = statistics.median(
            _per_request_ms(
                lambda: charge(
                    token_id=token.pk, project_id=project.pk, project_limits=(None, None)
                ),
                args.requests,
            )
            for _ in range(args.rounds)
        )

    baseline, limited = statistics.median(off), statistics.median(on)
    cost = limited - baseline
    print(f"GET {path.replace(run.id, '{id}')}, {args.rounds} rounds of {args.requests}")
    print(f"  limiter off (baseline): {baseline:.3f} ms/request")
    print(f"  limiter on:             {limited:.3f} ms/request")
    print(f"  cost of the limiter:    {cost:.3f} ms/request (target <= {TARGET_MS} ms)")
    print(f"  charge statement alone: {alone:.3f} ms")
    print("target met" if cost <= TARGET_MS else "target missed")


if __name__ == "__main__":
    main()
