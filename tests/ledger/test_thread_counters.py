"""The thread list's counters on the thread row equal a recount after any sequence of ledger
writes (begin, stream, commit, fail, cancel, stop, restore, lease expiry, flag, import)."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.base import make_user
from transcripts import ledger
from transcripts.errors import DomainError
from transcripts.interchange.export import export_thread
from transcripts.interchange.imports import import_data
from transcripts.ledger.default_project import default_project
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.moderation import flag_message, unflag_message
from transcripts.ledger.projects import set_member
from transcripts.models import OPEN_STATUSES, Message, Run, RunOrigin, Thread
from transcripts.selectors.prices import price_for

COUNTERS = (
    "message_count",
    "branch_count",
    "run_count",
    "open_run_count",
    "failed_run_count",
    "flagged_count",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "last_run_status",
    "last_run_duration_ms",
    "last_model",
    "last_agent",
)


LARGEST = 2**63 - 1


def _tokens(usage: Any, camel: str, snake: str) -> int:
    for key in (camel, snake):
        value = usage.get(key) if isinstance(usage, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return max(0, int(Decimal(str(value)).quantize(Decimal(1), ROUND_HALF_UP)))
    return 0


def _flagged(message: Message) -> bool:
    mark = message.metadata.get("flagged", False) if isinstance(message.metadata, dict) else False
    return message.flagged_at is not None or mark not in (False, 0, "", None)


def recount(thread: Thread) -> dict[str, Any]:
    """The counters of thread, counted again from its rows in Python."""
    messages = list(Message.objects.filter(thread=thread).order_by("created_at", "id"))
    parents = {m.parent_id for m in messages}
    runs = list(Run.objects.filter(thread=thread).order_by("created_at", "id"))
    inputs = [_tokens(r.usage, "inputTokens", "input_tokens") for r in runs]
    outputs = [_tokens(r.usage, "outputTokens", "output_tokens") for r in runs]
    cost = 0
    for run, i, o in zip(runs, inputs, outputs, strict=True):
        price = price_for(run.model)
        if price is not None:
            exact = i * Decimal(str(price.input)) + o * Decimal(str(price.output))
            cost += int(exact.quantize(Decimal(1), ROUND_HALF_UP))
    closed = [r for r in runs if r.status not in OPEN_STATUSES]
    last = closed[-1] if closed else None
    duration = 0
    if last is not None and last.finished_at is not None:
        took = last.finished_at - (last.started_at or last.created_at)
        duration = max(0, (took // timedelta(microseconds=1) + 500) // 1000)
    agents = [m.metadata.get("agentId") for m in messages if m.metadata.get("agentId")]
    models = [r.model for r in runs if r.model]
    return {
        "message_count": len(messages),
        "branch_count": sum(1 for m in messages if m.id not in parents),
        "run_count": len(runs),
        "open_run_count": sum(1 for r in runs if r.status in OPEN_STATUSES),
        "failed_run_count": sum(1 for r in runs if r.status == "failed"),
        "flagged_count": sum(1 for m in messages if _flagged(m)),
        "input_tokens": min(sum(inputs), LARGEST),
        "output_tokens": min(sum(outputs), LARGEST),
        "total_tokens": min(sum(inputs) + sum(outputs), LARGEST),
        "cost_micros": min(cost, LARGEST),
        "last_run_status": last.status if last else "",
        "last_run_duration_ms": duration,
        "last_model": models[-1] if models else "",
        "last_agent": str(agents[-1])[:200] if agents else "",
    }


def stored(thread: Thread) -> dict[str, Any]:
    """The counters the ledger kept on the thread row."""
    return dict(Thread.objects.filter(pk=thread.pk).values(*COUNTERS).get())


MODELS = st.sampled_from(["gpt-4o", "gpt-4o-mini-2024-07-18", "my-own-model", ""])
AGENTS = st.sampled_from(["planner", "coder", None])
USAGE = st.fixed_dictionaries(
    {},
    optional={
        "inputTokens": st.integers(-5, 5000) | st.just(LARGEST),
        "outputTokens": st.integers(0, 5000),
    },
)


def _answer(agent: str | None, flagged: bool, usage: dict[str, int]) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"role": "assistant"}
    if agent:
        start["agentId"] = agent
    if flagged:
        start["metadata"] = {"flagged": True}
    items: list[tuple[str, dict[str, Any]]] = [
        ("message-start", start),
        ("text-delta", {"delta": "words "}),
        ("step-finished", {"finishReason": "stop", "usage": usage}),
        ("message-end", {}),
    ]
    return [{"seq": n, "kind": k, "data": d} for n, (k, d) in enumerate(items, start=1)]


class CounterMachine(RuleBasedStateMachine):
    """Ledger writes at random over two threads; the counters match a recount after each."""

    def __init__(self) -> None:
        super().__init__()
        self.example = transaction.atomic()
        self.example.__enter__()
        self.threads: list[Thread] = []
        self.runs: list[str] = []
        self.moderator: User | None = None

    @initialize()
    def create(self) -> None:
        project = default_project()
        self.threads = [ledger.create_thread(project=project, title=f"t{n}")[0] for n in (0, 1)]
        self.moderator = make_user(f"mod-{len(Thread.objects.all())}", is_staff=True)
        set_member(project=project, user=self.moderator, role="admin")

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.example.__exit__(None, None, None)

    def _run(self, index: int) -> Run | None:
        return Run.objects.get(pk=self.runs[index % len(self.runs)]) if self.runs else None

    def _fork(self, thread: Thread, index: int | None) -> Any:
        if index is None:
            return ledger.HEAD
        ids = list(Message.objects.filter(thread=thread).order_by("id").values_list("pk", flat=1))
        return ids[index % len(ids)] if ids else None

    @rule(
        which=st.integers(0, 1),
        fork=st.none() | st.integers(0, 50),
        model=MODELS,
        agent=AGENTS,
        flagged=st.booleans(),
        usage=USAGE,
        web=st.booleans(),
        then=st.sampled_from(["commit", "fail", "cancel", "stop", "open"]),
    )
    def turn(
        self,
        which: int,
        fork: int | None,
        model: str,
        agent: str | None,
        flagged: bool,
        usage: dict[str, int],
        web: bool,
        then: str,
    ) -> None:
        thread = self.threads[which]
        origin = RunOrigin.WEB if web else RunOrigin.API
        run, _ = ledger.begin_run(
            thread=thread, fork_from=self._fork(thread, fork), model=model, origin=origin
        )
        self.runs.append(run.id)
        ledger.append_events(run=run, events=_answer(agent, flagged, usage))
        if then == "commit":
            ledger.commit_run(run=run)
        elif then == "fail":
            ledger.fail_run(run=run, error="boom")
        elif then == "cancel":
            ledger.cancel_run(run=run)
        elif then == "stop":
            ledger.stop_run(run=run)

    @rule(index=st.integers(0, 50), then=st.sampled_from(["commit", "fail", "restore"]))
    def close_or_restore(self, index: int, then: str) -> None:
        run = self._run(index)
        if run is None:
            return
        try:
            if then == "commit":
                ledger.commit_run(run=run)
            elif then == "fail":
                ledger.fail_run(run=run, error="late")
            else:
                ledger.restore_run(run=run)
        except DomainError:
            pass  # refused (closed, or nothing to restore): nothing changed

    @rule(which=st.integers(0, 1))
    def queue_and_expire(self, which: int) -> None:
        run, _ = ledger.begin_run(thread=self.threads[which], status="queued", model="gpt-4o")
        self.runs.append(run.id)
        ledger.claim_run(run=run, worker="w", lease_seconds=60)
        Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
        assert ledger.expire_leases() == [run.id]

    @rule(index=st.integers(0, 50), flag=st.booleans())
    def flag(self, index: int, flag: bool) -> None:
        message = Message.objects.order_by("id")[index : index + 1].first()
        if message is None or self.moderator is None:
            return
        if flag:
            flag_message(user=self.moderator, message=message, reason="look")
        else:
            unflag_message(user=self.moderator, message=message)

    @invariant()
    def counters_match_a_recount(self) -> None:
        for thread in self.threads:
            assert stored(thread) == recount(thread)


@pytest.mark.django_db(transaction=False)
def test_counters_match_a_recount_after_random_writes() -> None:
    runner = settings(
        max_examples=25,
        stateful_step_count=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )(CounterMachine)
    runner.TestCase().runTest()


@pytest.mark.django_db
def test_an_import_counts_its_threads() -> None:
    """A thread written by an import has its counters, as if it had streamed."""
    source = ledger.create_thread(project=default_project(), title="source")[0]
    run, _ = ledger.begin_run(thread=source, model="gpt-4o")
    ledger.append_events(run=run, events=_answer("coder", True, {"inputTokens": 7}))
    ledger.commit_run(run=run)
    document = json.loads(export_thread(source, "canonical").content)
    delete_threads([source.id])
    result = import_data(document, project=default_project())
    (imported,) = Thread.objects.filter(pk__in=result.thread_ids)
    assert stored(imported) == recount(imported)
    assert stored(imported)["message_count"] == 1
    assert stored(imported)["input_tokens"] == 7


def _scans(table: str) -> tuple[int, int]:
    """Sequential and index scans of table in this transaction so far."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = %s",
            [table],
        )
        row = cursor.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


@pytest.mark.django_db
def test_a_recount_of_several_threads_reads_their_messages_by_index() -> None:
    """An import's recount (several threads) never reads the whole message table per thread,
    whatever the planner's statistics (right after a bulk import they describe a store of a few
    threads): on a table this small the planner would pick a sequential scan per thread.
    The session's setting is as it was afterwards."""
    from django.db import connection

    from transcripts.ids import to_uuid
    from transcripts.ledger.counters import recount as recount_threads

    threads = []
    for n in range(4):
        thread = ledger.create_thread(project=default_project(), title=f"t{n}")[0]
        run, _ = ledger.begin_run(thread=thread, model="gpt-4o")
        ledger.append_events(run=run, events=_answer("coder", n % 2 == 0, {"inputTokens": n}))
        ledger.commit_run(run=run)
        threads.append(thread)
    Thread.objects.filter(pk__in=[t.pk for t in threads]).update(message_count=0, input_tokens=0)
    seq_before, idx_before = _scans(Message._meta.db_table)

    recount_threads([to_uuid(t.pk) for t in threads])

    seq_after, idx_after = _scans(Message._meta.db_table)
    assert seq_after == seq_before
    assert idx_after > idx_before
    for thread in threads:
        thread.refresh_from_db()
        assert stored(thread) == recount(thread)
        assert stored(thread)["message_count"] == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone() == ("on",)
