"""An append outside a transaction is one autocommitted statement; anything unusual still gets
the full path and its precise refusal."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.factories import events, make_thread
from transcripts import ledger
from transcripts.errors import RunClosed, SeqGap, ThreadLocked
from transcripts.ledger.notify import run_channel
from transcripts.models import Event, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db(transaction=True)

DELTA = ("text-delta", {"delta": "hi "})


def _listener(run: Run) -> psycopg.Connection[Any]:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    listener = psycopg.connect(**params, autocommit=True)
    listener.execute(f'LISTEN "{run_channel(run.id)}"')
    return listener


def test_a_following_append_is_one_statement_that_starts_the_run_and_notifies() -> None:
    run, _ = ledger.begin_run(thread=make_thread(), status=RunStatus.QUEUED)
    listener = _listener(run)
    try:
        with CaptureQueriesContext(connection) as queries:
            result = ledger.append_events(run=run.id, events=events(DELTA, DELTA))
        assert len(queries) == 1
        assert (result.last_seq, result.accepted, result.duplicates) == (2, 2, 0)
        told = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
        assert told == ['{"lastSeq": 2, "status": "streaming"}']
    finally:
        listener.close()
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.last_seq) == (RunStatus.STREAMING, 2)
    assert stored.started_at is not None and stored.first_event_at is not None
    assert list(Event.objects.filter(run=run).values_list("seq", "thread_id")) == [
        (1, run.thread_id),
        (2, run.thread_id),
    ]


def test_without_start_a_queued_run_stays_queued() -> None:
    run, _ = ledger.begin_run(thread=make_thread(), status=RunStatus.QUEUED)
    ledger.append_events(run=run.id, events=events(DELTA), start=False)
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.last_seq, stored.started_at) == (RunStatus.QUEUED, 1, None)


def test_what_the_one_statement_cannot_take_gets_the_full_paths_answer() -> None:
    thread = make_thread()
    run, _ = ledger.begin_run(thread=thread)
    ledger.append_events(run=run.id, events=events(DELTA))
    # A re-send is a no-op, a gap is refused with the expected seq.
    again = ledger.append_events(run=run.id, events=events(DELTA))
    assert (again.accepted, again.duplicates) == (0, 1)
    with pytest.raises(SeqGap):
        ledger.append_events(run=run.id, events=events(DELTA, start=5))
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    with pytest.raises(ThreadLocked):
        ledger.append_events(run=run.id, events=events(DELTA, start=2))
    Thread.objects.filter(pk=thread.pk).update(locked=False)
    ledger.commit_run(run=run.id)
    with pytest.raises(RunClosed):
        ledger.append_events(run=run.id, events=events(DELTA, start=2))
    assert Event.objects.filter(run=run).count() == 1


def test_inside_a_transaction_the_append_joins_it() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    with pytest.raises(RuntimeError), transaction.atomic():
        ledger.append_events(run=run.id, events=events(DELTA))
        raise RuntimeError("rolled back")
    assert Run.objects.get(pk=run.pk).last_seq == 0
    assert not Event.objects.filter(run=run).exists()
