"""Random lifecycles across a few threads; the invariants of DESIGN.md hold after every step."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.ledger.invariants import check_all
from tests.ledger.strategies import ANY_DATA, KIND_WEIGHTS
from transcripts import ledger, selectors
from transcripts.errors import Conflict, RunClosed, SeqConflict, SeqGap
from transcripts.ids import new_ulid
from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Message, Run, RunStatus, Thread

EVENT = KIND_WEIGHTS.flatmap(lambda kind: ANY_DATA[kind].map(lambda data: (kind, data)))
FORK = st.one_of(st.just("head"), st.just("root"), st.integers(0, 1000))
# Negative indexes pick one of the latest runs, which keeps most sequences on a few runs.
RUN = st.integers(-3, 50)


class LedgerMachine(RuleBasedStateMachine):
    """Begin, append, commit, fail, cancel, restore and fork at random."""

    def __init__(self) -> None:
        super().__init__()
        self.example = transaction.atomic()
        self.example.__enter__()
        self.threads: list[Thread] = []
        self.run_ids: list[str] = []
        # What the ledger acknowledged, per run: (seq, kind, data).
        self.accepted: dict[str, list[tuple[int, str, Any]]] = {}
        self.touched: set[str] = set()
        self.steps = 0

    @initialize(count=st.integers(2, 3))
    def create_threads(self, count: int) -> None:
        self.threads = [
            ledger.create_thread(project=default_project(), title=f"t{n}")[0] for n in range(count)
        ]

    def teardown(self) -> None:
        # Each example runs in its own savepoint, so one example's rows (or one failed
        # statement) never leak into the next.
        transaction.set_rollback(True)
        self.example.__exit__(None, None, None)

    def _touched_runs(self) -> list[Run]:
        return list(Run.objects.filter(pk__in=self.touched))

    def _run(self, index: int) -> Run | None:
        if not self.run_ids:
            return None
        run_id = self.run_ids[index % len(self.run_ids)]
        self.touched.add(run_id)
        return Run.objects.get(pk=run_id)

    # --- rules -------------------------------------------------------------------------------

    def _fork_point(self, thread: Thread, fork: str | int) -> Any:
        if fork == "head":
            return ledger.HEAD
        if fork == "root":
            return None
        # Any message of the thread, on the active path or not.
        ids = list(
            Message.objects.filter(thread=thread).order_by("id").values_list("pk", flat=True)
        )
        return ids[int(fork) % len(ids)] if ids else None

    @rule(thread_index=st.integers(0, 2), fork=FORK, client_id=st.booleans())
    def begin(self, thread_index: int, fork: str | int, client_id: bool) -> None:
        thread = self.threads[thread_index % len(self.threads)]
        fork_from = self._fork_point(thread, fork)
        wanted = new_ulid() if client_id else None
        run, created = ledger.begin_run(thread=thread, fork_from=fork_from, run_id=wanted)
        assert created
        if wanted is not None:
            again, created_again = ledger.begin_run(
                thread=thread, fork_from=fork_from, run_id=wanted
            )
            assert (again.pk, created_again) == (run.pk, False)
        self.run_ids.append(run.id)
        self.touched.add(run.id)
        self.accepted[run.id] = []

    @rule(thread_index=st.integers(0, 2), text=st.sampled_from(["a", "b", "c"]))
    def turn_at_the_head(self, thread_index: int, text: str) -> None:
        self._turn(thread_index, "head", text)

    @rule(thread_index=st.integers(0, 2), fork=FORK, text=st.sampled_from(["a", "b", "c"]))
    def turn_anywhere(self, thread_index: int, fork: str | int, text: str) -> None:
        self._turn(thread_index, fork, text)

    @rule(thread_index=st.integers(0, 2), message=st.integers(0, 1000))
    def regenerate_any_message(self, thread_index: int, message: int) -> None:
        self._turn(thread_index, message, "r")

    def _turn(self, thread_index: int, fork: str | int, text: str) -> None:
        """A whole turn at once (begin, stream, commit), so that branches grow quickly."""
        thread = self.threads[thread_index % len(self.threads)]
        run, _ = ledger.begin_run(thread=thread, fork_from=self._fork_point(thread, fork))
        batch = [
            {"seq": 1, "kind": "message", "data": {"role": "user", "parts": []}},
            {"seq": 2, "kind": "text-delta", "data": {"delta": text}},
        ]
        ledger.append_events(run=run, events=batch)
        assert ledger.commit_run(run=run).status == RunStatus.COMMITTED
        self.run_ids.append(run.id)
        self.touched.add(run.id)
        self.accepted[run.id] = [(e["seq"], e["kind"], e["data"]) for e in batch]

    @rule(run_index=RUN, items=st.lists(EVENT, min_size=1, max_size=5))
    def append(self, run_index: int, items: list[tuple[str, Any]]) -> None:
        run = self._run(run_index)
        if run is None:
            return
        batch = [
            {"seq": run.last_seq + n, "kind": kind, "data": data}
            for n, (kind, data) in enumerate(items, start=1)
        ]
        if not run.is_open:
            with pytest.raises(RunClosed):
                ledger.append_events(run=run, events=batch)
            return
        result = ledger.append_events(run=run, events=batch)
        assert (result.last_seq, result.accepted) == (run.last_seq + len(batch), len(batch))
        self.accepted[run.id] += [(e["seq"], e["kind"], e["data"]) for e in batch]

    @rule(run_index=RUN, back=st.integers(1, 3))
    def resend(self, run_index: int, back: int) -> None:
        run = self._run(run_index)
        if run is None or run.last_seq == 0:
            return
        tail = self.accepted[run.id][-back:]
        batch = [{"seq": seq, "kind": kind, "data": data} for seq, kind, data in tail]
        result = ledger.append_events(run=run, events=batch)
        assert (result.accepted, result.duplicates) == (0, len(batch))

    @rule(run_index=RUN, gap=st.booleans())
    def append_wrongly(self, run_index: int, gap: bool) -> None:
        run = self._run(run_index)
        if run is None:
            return
        if gap:
            with pytest.raises(SeqGap):
                ledger.append_events(
                    run=run, events=[{"seq": run.last_seq + 2, "kind": "step-started"}]
                )
        elif run.last_seq:
            with pytest.raises(SeqConflict):
                ledger.append_events(
                    run=run, events=[{"seq": run.last_seq, "kind": "data-other", "data": 0}]
                )

    @rule(run_index=RUN)
    def commit(self, run_index: int) -> None:
        run = self._run(run_index)
        if run is None:
            return
        if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            with pytest.raises(RunClosed):
                ledger.commit_run(run=run)
            return
        if run.is_open:
            ids = [m["id"] for m in selectors.project_run(run).messages]
            if Message.objects.filter(pk__in=ids).exists():
                with pytest.raises(Conflict):
                    ledger.commit_run(run=run)
                return
        before = run.status
        committed = ledger.commit_run(run=run)
        assert committed.status == (before if before == RunStatus.SUPERSEDED else "committed")
        if before in (RunStatus.QUEUED, RunStatus.STREAMING):
            thread = Thread.objects.get(pk=run.thread_id)
            last = run.messages.order_by("-position").first()
            assert thread.head_id == (last.id if last else run.fork_from_id)

    @rule(run_index=RUN, cancel=st.booleans())
    def close(self, run_index: int, cancel: bool) -> None:
        run = self._run(run_index)
        if run is None:
            return
        wanted = RunStatus.CANCELLED if cancel else RunStatus.FAILED
        if not run.is_open and run.status != wanted:
            with pytest.raises(RunClosed):
                ledger.cancel_run(run=run) if cancel else ledger.fail_run(run=run, error="x")
            return
        closed = ledger.cancel_run(run=run) if cancel else ledger.fail_run(run=run, error="x")
        assert closed.status == wanted
        assert not closed.messages.exists()

    @rule(run_index=RUN)
    def restore(self, run_index: int) -> None:
        run = self._run(run_index)
        if run is None:
            return
        if run.status not in (RunStatus.SUPERSEDED, RunStatus.COMMITTED):
            with pytest.raises(Conflict):
                ledger.restore_run(run=run)
            return
        restored = ledger.restore_run(run=run)
        assert restored.status == RunStatus.COMMITTED
        first = run.messages.order_by("position").first()
        if first is not None and run.status == RunStatus.SUPERSEDED:
            first.refresh_from_db()
            assert first.active

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def the_design_invariants_hold(self) -> None:
        # Projections only change with a run's own events or status: check the runs the
        # last step touched, and every run every few steps.
        self.steps += 1
        check_all(self.threads, None if self.steps % 8 == 0 else self._touched_runs())
        self.touched.clear()

    @invariant()
    def every_accepted_event_replays(self) -> None:
        replayed: dict[str, list[tuple[int, str, Any]]] = {run_id: [] for run_id in self.accepted}
        rows = Event.objects.filter(run_id__in=list(self.accepted)).order_by("run_id", "seq")
        for run_id, seq, kind, data in rows.values_list("run_id", "seq", "kind", "data"):
            replayed[run_id].append((seq, kind, data))
        assert replayed == self.accepted


@pytest.mark.django_db
def test_the_invariants_hold_across_random_lifecycles(settings_fixture: Any) -> None:
    settings_fixture.TRANSCRIPTS_SNAPSHOT_EVERY = 3
    machine_settings = settings(
        max_examples=30,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(LedgerMachine, settings=machine_settings)


@pytest.fixture
def settings_fixture(settings: Any) -> Any:
    """pytest-django's settings fixture, renamed so hypothesis' settings stays importable."""
    return settings
