"""The dashboard's rollups (migration 0020's triggers) never drift: after random writes through
the ledger (runs begun, committed, failed, stopped, expired, moved in time; threads hidden,
unhidden, deleted, imported, moved between projects) the rollup-backed figures of random
windows equal a scan of the runs (the oracle in stats_oracle.py), counts and tokens exactly,
percentiles within the histograms' bound."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.base import Team
from tests.factories import make_run, make_thread
from tests.ledger.stats_oracle import exact_percentiles, scan
from transcripts import interchange, ledger
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.moderation import hide_thread, unhide_thread
from transcripts.models import Run, Thread
from transcripts.selectors import stats as stats_module
from transcripts.selectors.stats import (
    GROUPS,
    ProjectStats,
    Window,
    make_window,
    project_stats,
    sources,
)

pytestmark = pytest.mark.django_db

BASE = datetime(2026, 3, 2, tzinfo=UTC)
BOUND = 2 ** (1 / 16) - 1  # the histograms' relative error (and 1 ms below 1 ms)
MODELS = ("gpt-4o", "local", "")
OUTCOMES = ("commit", "fail", "cancel", "open", "expire")

RUNS = st.tuples(
    st.just("run"),
    st.integers(0, 3),  # the thread (3: in project beta)
    st.sampled_from(MODELS),
    st.integers(0, 4 * 24 * 60),  # its start, in minutes after BASE
    st.sampled_from(OUTCOMES),
    st.floats(0.0002, 600),  # its latency, in seconds
    st.integers(0, 5000),  # input tokens
)
THREAD_CHANGES = st.tuples(
    st.sampled_from(["hide", "unhide", "delete", "move", "import"]), st.integers(0, 3)
)
RETIMES = st.tuples(st.just("retime"), st.integers(0, 30), st.integers(0, 4 * 24 * 60))
OPERATIONS = st.lists(st.one_of(RUNS, RUNS, RUNS, THREAD_CHANGES, RETIMES), max_size=15)
WINDOWS = st.lists(
    st.tuples(st.integers(-120, 4 * 24 * 60), st.integers(1, 12 * 24 * 60)), min_size=1, max_size=4
)


def add_run(
    thread: Thread, model: str, minute: int, outcome: str, latency: float, tokens: int
) -> None:
    """A run through the ledger ending as outcome, then placed at BASE + minute."""
    run = make_run(thread, ("text-delta", {"delta": "ok"}), commit=outcome == "commit", model=model)
    if outcome == "fail":
        ledger.fail_run(run=run, error={"message": "boom"})
    elif outcome == "cancel":
        ledger.cancel_run(run=run)
    elif outcome == "expire":
        ledger.claim_run(run=run, worker="w", lease_seconds=60)
        Run.objects.filter(pk=run.pk).update(lease_expires_at=BASE)
        assert ledger.expire_leases() == [run.id]
    at = BASE + timedelta(minutes=minute)
    Run.objects.filter(pk=run.pk).update(
        created_at=at,
        started_at=at,
        first_event_at=at + timedelta(seconds=latency / 3),
        finished_at=None if outcome == "open" else at + timedelta(seconds=latency),
        usage={"inputTokens": tokens, "output_tokens": tokens // 7},
    )


def apply(team: Team, threads: list[Thread], operation: tuple[Any, ...]) -> None:
    """One random write."""
    kind, *rest = operation
    if kind == "run":
        index, *run = rest
        if Thread.objects.filter(pk=threads[index].pk).exists():
            add_run(threads[index], *run)
    elif kind == "retime":
        runs = list(Run.objects.order_by("id").values_list("id", flat=True))
        if runs:
            at = BASE + timedelta(minutes=rest[1])
            Run.objects.filter(pk=runs[rest[0] % len(runs)]).update(created_at=at, started_at=at)
    else:
        thread = Thread.objects.filter(pk=threads[rest[0]].pk).first()
        if thread is None:
            return
        if kind == "delete":
            delete_threads([thread.id])
        elif kind == "move":  # no ledger path moves a thread; the admin's form could
            other = team.beta if thread.project_id == team.alpha.pk else team.alpha
            Thread.objects.filter(pk=thread.pk).update(project=other)
        elif kind == "import":
            document = json.loads(interchange.export_thread(thread, "canonical").content)
            interchange.import_data(document, project=team.alpha)
        else:
            change = hide_thread if kind == "hide" else unhide_thread
            change(user=team.superuser, thread=thread)


def close(got: float | None, exact: float | None) -> bool:
    """got is exact within the histograms' bound."""
    if got is None or exact is None:
        return got is exact
    return abs(got - exact) <= BOUND * exact + 0.001


def check(stats: ProjectStats, project_id: int, window: Window, include_hidden: bool) -> None:
    """stats agree with the scan of window's runs."""
    scanned = scan(project_id, window, include_hidden=include_hidden)
    for bucket in stats.buckets:
        for group in GROUPS:
            expected = sum(
                n for (b, g, _), n in scanned.runs.items() if (b, g) == (bucket.start, group)
            )
            assert bucket.statuses[group] == expected, (bucket.start, group)
        for model, usage in bucket.models.items():
            assert usage.input_tokens == scanned.tokens[bucket.start, model, "in"]
            assert usage.output_tokens == scanned.tokens[bucket.start, model, "out"]
            assert usage.runs == sum(
                n for (b, _, m), n in scanned.runs.items() if (b, m) == (bucket.start, model)
            )
    assert sum(stats.statuses.values()) == sum(scanned.runs.values())
    assert stats.total.input_tokens == sum(
        n for (_, _, k), n in scanned.tokens.items() if k == "in"
    )
    threads = {t.id: (t.runs, t.failed) for t in stats.threads}
    expected_threads = {
        thread: (runs, scanned.threads[thread, "failed"])
        for (thread, kind), runs in scanned.threads.items()
        if kind == "runs"
    }
    assert threads == {ledger_id(k): v for k, v in expected_threads.items()}
    latency, ttft = exact_percentiles(scanned.latency), exact_percentiles(scanned.ttft)
    assert close(stats.timing.latency_p50, latency[0]) and close(
        stats.timing.latency_p95, latency[1]
    )
    assert close(stats.timing.ttft_p50, ttft[0]) and close(stats.timing.ttft_p95, ttft[1])


def ledger_id(uuid_text: str) -> str:
    """A thread id from the scan (uuid text) as the app names it (a ULID)."""
    from transcripts.ids import ulid_of

    return ulid_of(uuid_text)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=OPERATIONS, windows=WINDOWS)
def test_the_rollups_equal_a_recount_after_random_writes(
    team: Team,
    monkeypatch: pytest.MonkeyPatch,
    operations: list[tuple[Any, ...]],
    windows: list[tuple[int, int]],
) -> None:
    # Windows over 7 days rank the busiest threads pruned: a batch of one candidate, at most
    # three, so the tests reach both its early end and its fallback.
    monkeypatch.setattr(stats_module, "BATCH", 1)
    monkeypatch.setattr(stats_module, "BATCHES", 3)
    with transaction.atomic():
        threads = [make_thread(f"T{n}", project=team.alpha) for n in range(3)]
        threads.append(make_thread("Beta", project=team.beta))
        for operation in operations:
            apply(team, threads, operation)
        for start, minutes in windows:
            window = make_window(
                BASE + timedelta(minutes=start), BASE + timedelta(minutes=start + minutes)
            )
            for include_hidden in (False, True):
                stats = project_stats(team.alpha.pk, window, include_hidden=include_hidden)
                check(stats, team.alpha.pk, window, include_hidden)
        transaction.set_rollback(True)


def test_the_histogram_buckets_match_the_selectors_reading() -> None:
    """The SQL bucket of a duration holds it between the bounds the selector reads."""
    from transcripts.selectors.stats import bucket_seconds

    with connection.cursor() as cursor:
        for seconds in (0.0, 0.0004, 0.001, 0.0015, 0.25, 1.0, 3.7, 90.0, 86_400.0):
            cursor.execute(
                "SELECT transcripts_hist_index(%s, %s)",
                [BASE, BASE + timedelta(seconds=seconds)],
            )
            (index,) = cursor.fetchone()
            assert abs(bucket_seconds(index) - seconds) <= BOUND * seconds + 0.001, seconds


def test_a_window_reads_whole_days_and_hours_from_the_rollup_and_its_edges_from_the_runs() -> None:
    start, end = (
        BASE + timedelta(hours=10, minutes=30),
        BASE + timedelta(days=2, hours=14, minutes=15),
    )

    by_day = sources(make_window(start, end), days=True)
    by_hour = sources(make_window(start, end), days=False)

    hour, day = timedelta(hours=1), timedelta(days=1)
    assert by_day.days == [(BASE + day, BASE + 2 * day)]
    assert by_day.hours == [
        (BASE + 11 * hour, BASE + day),
        (BASE + 2 * day, BASE + 2 * day + 14 * hour),
    ]
    assert by_day.runs == [(start, BASE + 11 * hour), (BASE + 2 * day + 14 * hour, end)]
    assert by_hour.days == [] and by_hour.hours == [(BASE + 11 * hour, BASE + 2 * day + 14 * hour)]
    inside = sources(make_window(start, start + timedelta(minutes=20)), days=True)
    assert (inside.days, inside.hours, inside.runs) == (
        [],
        [],
        [(start, start + timedelta(minutes=20))],
    )


@pytest.mark.parametrize("batches", [10, 1])
def test_a_long_windows_busiest_threads_are_ranked_from_the_fewest_candidates(
    team: Team, monkeypatch: pytest.MonkeyPatch, batches: int
) -> None:
    """Candidates by run count, one a batch: the ranking ends once no thread left can enter
    it (10 batches), or falls back to ranking every thread (1 batch)."""
    monkeypatch.setattr(stats_module, "TOP", 2)
    monkeypatch.setattr(stats_module, "BATCH", 1)
    monkeypatch.setattr(stats_module, "BATCHES", batches)
    threads = [make_thread(name, project=team.alpha) for name in "ABCDE"]
    for thread, runs in zip(threads, (5, 4, 3, 2, 1), strict=True):
        for _ in range(runs):
            make_run(thread, ("text-delta", {"delta": "ok"}))
    Run.objects.filter(thread_id=threads[0].id).update(created_at=BASE - timedelta(days=60))
    now = Run.objects.filter(thread_id=threads[1].id).first()
    assert now is not None
    window = make_window(now.created_at - timedelta(days=20), now.created_at + timedelta(days=1))

    stats = project_stats(team.alpha.pk, window, include_hidden=False)

    assert [(t.title, t.runs) for t in stats.threads] == [("B", 4), ("C", 3)]
