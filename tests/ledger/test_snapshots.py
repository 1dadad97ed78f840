"""Projection snapshots: stored by commit, the worker and its sweeper; never by a reader."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.api.conftest import ApiClient
from tests.factories import events, make_thread
from transcripts import ledger, selectors
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.tokens import issue_token
from transcripts.models import Message, Run
from transcripts.projector import Projector, project

pytestmark = pytest.mark.django_db


def deltas(*words: str, start: int = 1) -> list[dict[str, Any]]:
    return events(*[("text-delta", {"delta": w}) for w in words], start=start)


def stored_seq(run: Run) -> int:
    run.refresh_from_db()
    return run.snapshot_seq


def test_the_worker_stores_a_snapshot_every_n_events_equal_to_the_full_projection(
    settings: Any,
) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 5
    run, _ = ledger.begin_run(thread=make_thread())
    items = [
        ("step-started", {}),
        ("reasoning", {"text": "hmm "}),
        ("reasoning", {"text": "ok"}),
        ("text-delta", {"delta": "A"}),
        ("tool-call", {"toolCallId": "c", "toolName": "t", "input": {"n": 1}}),
        ("step-finished", {"finishReason": "tool-calls", "usage": {"inputTokens": 2}}),
        ("tool-result", {"toolCallId": "c", "output": [1], "isError": False}),
        ("text-delta", {"delta": "B"}),
        ("text-delta", {"delta": "C"}),
        ("data-note", {"x": 1}),
        ("error", {"message": "warn"}),
        ("text-delta", {"delta": "D"}),
    ]
    batch = events(*items)
    covered = []
    # Appends never store snapshots; after each flush the worker asks, and one is stored
    # once 5 events follow the last one.
    for part in (batch[:3], batch[3:6], batch[6:7], batch[7:11], batch[11:]):
        appended = ledger.append_events(run=run, events=part)
        assert stored_seq(run) == (covered[-1] if covered else 0)
        ledger.store_snapshot_if_due(run=run, last_seq=appended.last_seq)
        covered.append(stored_seq(run))
    assert covered == [0, 6, 6, 11, 11]
    assert run.snapshot is not None and run.snapshot["lastSeq"] == 11
    from_seq_one = project(
        [e.as_dict() for e in selectors.replay(run=run)], run_id=run.id, parent_id=run.fork_from_id
    )
    assert selectors.project_run(run) == from_seq_one


def test_the_sweeper_spaces_snapshots_out_as_a_run_grows_so_reads_stay_linear(
    settings: Any,
) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 4
    run, _ = ledger.begin_run(thread=make_thread())
    covered = []
    for seq in range(1, 101):
        ledger.append_events(run=run, events=deltas(str(seq), start=seq))
        ledger.store_due_snapshots()
        if stored_seq(run) not in covered[-1:]:
            covered.append(run.snapshot_seq)
    # Every 4 events at first, then every quarter of the run's length.
    assert covered == [0, 4, 8, 12, 16, 20, 25, 31, 38, 47, 58, 72, 90]
    assert selectors.project_run(run).messages[0]["parts"][0]["text"] == "".join(
        str(n) for n in range(1, 101)
    )


def test_the_sweeper_stores_the_snapshots_of_due_open_runs_only(settings: Any) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 3
    thread = make_thread()
    due, _ = ledger.begin_run(thread=thread)
    ledger.append_events(run=due, events=deltas("a", "b", "c"))
    short, _ = ledger.begin_run(thread=thread, fork_from=None)
    ledger.append_events(run=short, events=deltas("a", "b"))
    cancelled, _ = ledger.begin_run(thread=thread, fork_from=None)
    ledger.append_events(run=cancelled, events=deltas("a", "b", "c", "d"))
    ledger.cancel_run(run=cancelled)
    assert ledger.store_due_snapshots() == [due.id]
    assert [stored_seq(due), stored_seq(short), stored_seq(cancelled)] == [3, 0, 0]
    assert ledger.store_due_snapshots() == []


def test_a_stored_snapshot_never_goes_back_nor_lands_on_a_closed_run(settings: Any) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 2
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b", "c"))
    newest = selectors.projector_for(selectors.get_run(run.id))
    older = Projector(run_id=run.id, parent_id=None).apply_all(
        {"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at}
        for e in selectors.replay(run=run, limit=2)
    )
    assert ledger.store_snapshot(run, newest)
    assert not ledger.store_snapshot(run, older)
    assert stored_seq(run) == 3
    ledger.append_events(run=run, events=deltas("d", "e", start=4))
    ledger.fail_run(run=run, error="stopped")
    assert not ledger.store_snapshot(run, selectors.projector_for(selectors.get_run(run.id)))
    assert not ledger.store_snapshot_if_due(run=run, last_seq=5)
    assert stored_seq(run) == 3


def test_commit_builds_on_the_stored_snapshot(settings: Any) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 2
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b"))
    assert ledger.store_due_snapshots() == [run.id]
    ledger.append_events(run=run, events=deltas("c", start=3))
    # Mark the snapshot so the materialized text shows that commit started from it.
    run.refresh_from_db()
    snapshot = run.snapshot
    assert snapshot is not None and run.snapshot_seq == 2
    snapshot["messages"][0]["parts"][0]["text"] = "from snapshot:"
    Run.objects.filter(pk=run.pk).update(snapshot=snapshot)
    ledger.commit_run(run=run)
    assert Message.objects.get(run=run).parts == [{"type": "text", "text": "from snapshot:c"}]
    run.refresh_from_db()
    assert run.snapshot_seq == 3 and run.snapshot is not None and run.snapshot["lastSeq"] == 3


def test_a_snapshot_of_another_fork_point_is_ignored(settings: Any) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 2
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b", "c"))
    assert ledger.store_snapshot_if_due(run=run, last_seq=3)
    run.refresh_from_db()
    assert run.snapshot is not None
    Run.objects.filter(pk=run.pk).update(snapshot={**run.snapshot, "lastSeq": 1})
    assert selectors.project_run(run).messages[0]["parts"][0]["text"] == "abc"


def test_reading_a_run_through_the_api_or_its_page_stores_nothing(
    settings: Any, client: Client
) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 2
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b", "c", "d", "e"))
    before = Run.objects.values().get(pk=run.pk)
    assert before["snapshot_seq"] == 0

    _, token = issue_token(project=default_project(), name="reader", scopes=["read"])
    messages = ApiClient(token).get(f"/runs/{run.id}/messages")
    assert messages.status_code == 200
    reader = User.objects.create_user("reader", password="pw")
    set_member(project=default_project(), user=reader, role="viewer")
    client.force_login(reader)
    for page in ("run_detail", "run_live"):
        assert client.get(reverse(page, args=[run.id])).status_code == 200

    assert Run.objects.values().get(pk=run.pk) == before
