"""A canonical export with events re-imports as the same thread: runs, events, every branch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.factories import ask, conversation, make_run, say
from transcripts import interchange, ledger, selectors
from transcripts.errors import InvalidInput
from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Message, Run, RunStatus, Thread
from transcripts.selectors import active_path

pytestmark = pytest.mark.django_db


def _rich_thread() -> Thread:
    """Streamed runs, a regenerated answer regenerated twice, a failed and a cancelled run."""
    thread = conversation(turns=1, title="Lossless")
    prompt = Message.objects.get(thread=thread, depth=0)
    say(thread, "second answer", fork_from=prompt.id)
    say(thread, "third answer", fork_from=prompt.id)
    ask(thread, "and then?")
    make_run(
        thread,
        ("reasoning", {"text": "let me think", "signature": "sig"}),
        ("tool-call", {"toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}),
        ("tool-result", {"toolCallId": "c1", "output": {"hits": 1}, "isError": False}),
        ("text-delta", {"delta": "found "}),
        ("text-delta", {"delta": "it"}),
    )
    failed = make_run(thread, ("text-delta", {"delta": "half"}), commit=False)
    ledger.fail_run(run=failed, error={"code": "boom", "message": "provider down"})
    cancelled = make_run(thread, ("text-delta", {"delta": "stop"}), commit=False)
    ledger.cancel_run(run=cancelled)
    thread.refresh_from_db()
    return thread


def _state(thread_id: str) -> dict[str, Any]:
    thread = Thread.objects.get(pk=thread_id)
    runs = Run.objects.filter(thread_id=thread_id).order_by("id")
    return {
        "thread": (thread.title, thread.head_id, thread.metadata, thread.agents),
        "messages": [
            (m.as_canonical(), m.depth, m.active, m.run_id, m.first_seq, m.last_seq)
            for m in Message.objects.filter(thread_id=thread_id).order_by("id")
        ],
        "active": [m.id for m in active_path(thread)],
        "runs": [
            (r.id, r.status, r.fork_from_id, r.superseded_by_id, r.error, r.usage, r.last_seq)
            for r in runs
        ],
        "events": [
            (e.run_id, e.seq, e.kind, e.data)
            for e in Event.objects.filter(run__thread_id=thread_id).order_by("run_id", "seq")
        ],
    }


def test_a_canonical_export_with_events_restores_every_run_and_event():
    thread = _rich_thread()
    before = _state(thread.id)
    assert {r[1] for r in before["runs"]} >= {"committed", "superseded", "failed", "cancelled"}
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    Thread.objects.filter(pk=thread.pk).delete()

    assert interchange.import_data(document, project=default_project()).thread_ids == [thread.id]
    after = _state(thread.id)
    assert after == before
    # Exported once more, the restored thread gives the same document.
    again = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    assert again["messages"] == document["messages"]
    for new, old in zip(again["runs"], document["runs"], strict=True):
        assert {k: v for k, v in new.items() if v != old.get(k)} == {}


def test_restored_runs_still_project_to_their_messages():
    thread = _rich_thread()
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    Thread.objects.filter(pk=thread.pk).delete()
    interchange.import_data(document, project=default_project())
    for run in Run.objects.filter(thread_id=thread.id, status__in=["committed", "superseded"]):
        projected = [m["id"] for m in selectors.project_run(run).messages]
        assert projected == list(run.messages.order_by("position").values_list("id", flat=True))


def test_a_copy_with_fresh_ids_falls_back_to_message_events_but_keeps_every_run():
    thread = _rich_thread()
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    [copy_id] = interchange.import_data(document, project=default_project()).thread_ids
    assert copy_id != thread.id
    statuses = sorted(Run.objects.filter(thread_id=copy_id).values_list("status", flat=True))
    assert statuses == sorted(Run.objects.filter(thread=thread).values_list("status", flat=True))
    copied = Run.objects.filter(thread_id=copy_id, status="committed")
    assert {e.kind for r in copied for e in Event.objects.filter(run=r)} == {"message"}


def test_a_run_that_was_streaming_is_imported_closed_and_says_so():
    thread = conversation(turns=1)
    make_run(thread, ("text-delta", {"delta": "still going"}), commit=False)
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    Thread.objects.filter(pk=thread.pk).delete()
    interchange.import_data(document, project=default_project())
    assert not Run.objects.filter(thread_id=thread.id, status__in=["queued", "streaming"])
    [run] = Run.objects.filter(thread_id=thread.id, status=RunStatus.CANCELLED)
    assert run.error is not None and "streaming" in run.error["message"]
    assert list(Event.objects.filter(run=run).values_list("kind", flat=True)) == ["text-delta"]


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("generator", "a\u0000b", "runs[0].generator"),
        ("model", "m" * 201, "runs[0].model"),
        ("usage", {"tokens": float("inf")}, "runs[0].usage.tokens"),
        ("events", [{"seq": 1, "kind": "no-such-kind", "data": {}}], "runs[0].events[0].kind"),
        ("events", "nope", "runs[0].events"),
    ],
)
def test_unstorable_run_fields_are_a_422_with_their_path(field, value, path):
    thread = conversation(turns=1)
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    document["runs"][0][field] = value
    before = (Thread.objects.count(), Run.objects.count(), Event.objects.count())
    with pytest.raises(InvalidInput) as raised:
        interchange.import_data(document, project=default_project())
    assert path in [p["path"] for p in raised.value.details["problems"]]
    assert (Thread.objects.count(), Run.objects.count(), Event.objects.count()) == before


def test_times_postgres_cannot_store_are_dropped_not_a_crash():
    thread = conversation(turns=1)
    document = json.loads(interchange.export_thread(thread, "canonical").content)
    document["thread"]["createdAt"] = "0001-01-01T00:00:00-23:00"
    document["messages"][0]["createdAt"] = "0001-01-01T00:00:00-23:00"
    [copy_id] = interchange.import_data(document, project=default_project()).thread_ids
    assert Thread.objects.get(pk=copy_id).created_at.year == 1
