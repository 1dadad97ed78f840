"""The invariants of DESIGN.md, checked by querying the database."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from transcripts import selectors
from transcripts.models import Event, Message, Run, RunStatus, Thread
from transcripts.projector import project


def check_active_path(thread: Thread) -> None:
    """(1) One active message per depth 0..n-1, chained by parent, the head the deepest."""
    thread.refresh_from_db()
    path = list(Message.objects.filter(thread=thread, active=True).order_by("depth"))
    assert [m.depth for m in path] == list(range(len(path))), "active depths have holes"
    parents = [m.parent_id for m in path]
    assert parents == [None, *[m.id for m in path]][: len(path)], "active path is not one chain"
    assert thread.head_id == (path[-1].id if path else None), "head is not the deepest active"


def check_fork_points(thread: Thread) -> None:
    """(2) At each fork point at most one committed run; the active path runs through it.

    Precisely: per (thread, fork point) at most one run is committed; every superseded run
    points at another run of the same thread and fork point; every run with a message on
    the active path is committed (so an active fork point's active child belongs to the one
    committed run there); only committed and superseded runs have messages.
    """
    runs = list(Run.objects.filter(thread=thread))
    by_id = {r.id: r for r in runs}
    committed = Counter(r.fork_from_id for r in runs if r.status == RunStatus.COMMITTED)
    assert all(n == 1 for n in committed.values()), f"several committed at one fork: {committed}"
    for run in runs:
        if run.status == RunStatus.SUPERSEDED:
            replacer = by_id.get(run.superseded_by_id or "")
            assert replacer is not None and replacer.id != run.id, f"{run} points nowhere"
            assert replacer.fork_from_id == run.fork_from_id, f"{run} replaced at another fork"
        else:
            assert run.superseded_by_id is None, f"{run} has superseded_by"
    on_path = set(
        Message.objects.filter(thread=thread, active=True).values_list("run_id", flat=True)
    )
    for run_id in on_path:
        assert by_id[run_id].status == RunStatus.COMMITTED, f"{by_id[run_id]} is on the path"
    with_messages = set(Message.objects.filter(thread=thread).values_list("run_id", flat=True))
    for run_id in with_messages:
        assert by_id[run_id].status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED)


def _events_of(run: Run) -> list[dict[str, Any]]:
    return [e.as_dict() for e in Event.objects.filter(run=run).order_by("seq")]


def _same_time(a: str, b: str) -> bool:
    return datetime.fromisoformat(a) == datetime.fromisoformat(b)


def check_projections(runs: Iterable[Run]) -> None:
    """(3) Snapshot plus tail equals projection from seq 1; committed messages match it."""
    for run in runs:
        events = _events_of(run)
        assert [e["seq"] for e in events] == list(range(1, run.last_seq + 1)), "seq holes"
        full = project(events, run_id=run.id, parent_id=run.fork_from_id)
        assert selectors.project_run(run) == full, f"snapshot projection of {run} differs"
        if run.status not in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
            assert not run.messages.exists()
            continue
        stored = [m.as_canonical() for m in run.messages.order_by("position")]
        assert len(stored) == len(full.messages), f"{run} lost messages"
        for mine, theirs in zip(stored, full.messages, strict=True):
            assert _same_time(mine.pop("createdAt"), theirs["createdAt"])
            assert mine == {k: v for k, v in theirs.items() if k != "createdAt"}


def check_all(threads: list[Thread], runs: Iterable[Run] | None = None) -> None:
    """Every invariant of every thread (projections of the given runs, default all)."""
    for thread in threads:
        check_active_path(thread)
        check_fork_points(thread)
    check_projections(Run.objects.filter(thread__in=threads) if runs is None else runs)
