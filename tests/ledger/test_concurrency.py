"""Several OS threads, each with its own database connection, on one run or fork point."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from tests.factories import ask, last_message, make_run, make_thread
from tests.ledger.invariants import check_all
from transcripts import ledger
from transcripts.errors import SeqConflict, SeqGap
from transcripts.models import Event, Message, Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run work(0..count-1) in OS threads that start together; re-raise the first error."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    if errors:
        raise errors[0]
    return results


def test_concurrent_appends_lose_duplicate_and_reorder_nothing() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    workers, per_worker = 4, 30

    def append_all(worker: int) -> int:
        retries = 0
        n = 0
        while n < per_worker:
            # Batches of one or two, so overlapping batches from other workers collide.
            size = 1 + (n + worker) % 2 if n + 1 < per_worker else 1
            last_seq = Run.objects.get(pk=run.pk).last_seq
            batch = [
                {
                    "seq": last_seq + i + 1,
                    "kind": "text-delta",
                    "data": {"delta": f"{worker}:{n + i}"},
                }
                for i in range(size)
            ]
            try:
                result = ledger.append_events(run=run.id, events=batch)
            except (SeqGap, SeqConflict):
                retries += 1
                continue
            assert result.accepted == size
            n += size
        return retries

    retries = in_threads(workers, append_all)
    deltas = list(Event.objects.filter(run=run).order_by("seq").values_list("seq", "data"))
    assert [seq for seq, _ in deltas] == list(range(1, workers * per_worker + 1))
    by_worker: dict[int, list[int]] = {}
    for _, data in deltas:
        worker, n = map(int, data["delta"].split(":"))
        by_worker.setdefault(worker, []).append(n)
    assert by_worker == {w: list(range(per_worker)) for w in range(workers)}
    run.refresh_from_db()
    assert run.last_seq == workers * per_worker
    assert sum(retries) > 0, "the workers never collided; the test proves nothing"


def test_concurrent_commits_at_one_fork_point_leave_the_last_one_committed() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    runs = [
        make_run(
            thread, ("text-delta", {"delta": f"answer {n}"}), fork_from=prompt.id, commit=False
        )
        for n in range(5)
    ]

    in_threads(len(runs), lambda n: ledger.commit_run(run=runs[n].id))

    final = list(Run.objects.filter(pk__in=[r.pk for r in runs]))
    committed = [r for r in final if r.status == RunStatus.COMMITTED]
    assert len(committed) == 1
    assert all(r.status == RunStatus.SUPERSEDED for r in final if r not in committed)
    winner = committed[0]
    assert all(r.finished_at is not None for r in final)
    assert winner.finished_at == max(r.finished_at for r in final if r.finished_at)
    thread.refresh_from_db()
    assert thread.head_id == last_message(winner).id
    assert Message.objects.filter(run__in=runs).count() == 5
    check_all([thread])


def test_concurrent_regenerations_and_appends_keep_the_invariants() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))

    def regenerate(worker: int) -> None:
        for n in range(3):
            run, _ = ledger.begin_run(thread=thread, fork_from=prompt.id if n % 2 else ledger.HEAD)
            for seq in range(1, 4):
                event = {"seq": seq, "kind": "text-delta", "data": {"delta": f"{worker}.{n}.{seq}"}}
                ledger.append_events(run=run, events=[event])
            ledger.commit_run(run=run)

    in_threads(4, regenerate)
    assert Run.objects.filter(thread=thread).count() == 13
    check_all([thread])
