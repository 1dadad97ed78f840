"""Imports written many threads per batch, in one transaction: exact rows, nothing on refusal."""

from __future__ import annotations

import io
import json
import os
import uuid
from typing import Any

import pytest
from django.db import transaction
from ulid import ULID

from transcripts import interchange
from transcripts.errors import InvalidInput
from transcripts.formats.document import TreeThread, make_message
from transcripts.ids import new_ulid
from transcripts.ledger import importing
from transcripts.ledger.default_project import default_project
from transcripts.ledger.importing import TreeWriter, ulid_text
from transcripts.models import Event, Message, Run, Thread
from transcripts.projector import project

pytestmark = pytest.mark.django_db


def _conversation(index: int, messages: int, title: str | None = None) -> dict[str, Any]:
    """A ChatGPT conversation: a line of messages with a regenerated answer half way."""
    root = str(uuid.uuid4())
    mapping: dict[str, Any] = {root: {"id": root, "parent": None, "children": [], "message": None}}
    parent = root
    for made in range(messages):
        node = str(uuid.uuid4())
        role = "user" if made % 2 == 0 else "assistant"
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": role},
                "create_time": 1_700_000_000 + index * 100 + made,
                "content": {"content_type": "text", "parts": [f"{role} {made} of {index}\t\\ é"]},
            },
        }
        mapping[parent]["children"].append(node)
        if made == 1:
            other = str(uuid.uuid4())
            mapping[other] = {**mapping[node], "id": other, "children": []}
            mapping[other]["message"] = {**mapping[node]["message"], "id": other}
            mapping[parent]["children"].append(other)
        parent = node
    return {"title": title or f"Conversation {index}", "current_node": parent, "mapping": mapping}


def _stored() -> tuple[int, int, int, int]:
    return (
        Thread.objects.count(),
        Run.objects.count(),
        Message.objects.count(),
        Event.objects.count(),
    )


def test_ulid_text_spells_a_ulid_as_the_ulid_package_does():
    for raw in [b"\0" * 16, b"\xff" * 16, *(os.urandom(16) for _ in range(2000))]:
        assert ulid_text(raw) == str(ULID.from_bytes(raw))


def test_an_export_of_many_batches_stores_every_message_and_replays_it(monkeypatch):
    monkeypatch.setattr(importing, "BATCH_ROWS", 30)
    export = [_conversation(index, 9) for index in range(12)]
    raw = json.dumps(export).encode()

    result = interchange.import_stream(io.BytesIO(raw), "chatgpt", project=default_project())

    assert len(result.thread_ids) == 12 and result.report["messages"] == 12 * 10
    for thread_id, conversation in zip(result.thread_ids, export, strict=True):
        thread = Thread.objects.get(pk=thread_id)
        messages = Message.objects.filter(thread=thread)
        assert thread.title == conversation["title"] and messages.count() == 10
        texts = {m.parts[0]["text"] for m in messages}
        assert "user 0 of " + str(export.index(conversation)) + "\t\\ é" in texts
        assert thread.head_id == messages.order_by("-depth").first().id  # type: ignore[union-attr]
        for run in Run.objects.filter(thread=thread):
            events = [
                {"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at}
                for e in Event.objects.filter(run=run).order_by("seq")
            ]
            replayed = project(events, run_id=run.id, parent_id=run.fork_from_id).messages
            stored = [m.as_canonical() for m in run.messages.order_by("position")]
            assert [m["id"] for m in replayed] == [m["id"] for m in stored]
            assert [m["parts"] for m in replayed] == [m["parts"] for m in stored]


def test_a_refused_conversation_after_written_batches_changes_nothing(monkeypatch):
    monkeypatch.setattr(importing, "BATCH_ROWS", 30)
    before = _stored()
    export = [_conversation(index, 9) for index in range(10)]
    export.append(_conversation(10, 3, title="a NUL \x00 in the title"))

    with pytest.raises(InvalidInput) as refused:
        interchange.import_stream(
            io.BytesIO(json.dumps(export).encode()), "chatgpt", project=default_project()
        )

    assert refused.value.message.startswith("conversation 10:")
    assert _stored() == before


def _tree(thread_id: str, message_id: str) -> TreeThread:
    message = make_message(message_id, None, "user", [{"type": "text", "text": "hi"}])
    return TreeThread(title="same ids", messages=[message], active_leaf=message_id, id=thread_id)


def test_two_threads_of_one_batch_with_the_same_ids_keep_them_once():
    thread_id, message_id = new_ulid(), new_ulid()
    with transaction.atomic(), TreeWriter(project=default_project()) as writer:
        first = writer.add(_tree(thread_id, message_id))
        second = writer.add(_tree(thread_id, message_id))
        writer.flush()

    assert first.id == thread_id and second.id != thread_id
    kept = Message.objects.get(thread=first)
    fresh = Message.objects.get(thread=second)
    assert kept.id == message_id and fresh.id != message_id
    assert fresh.metadata["sourceMessageId"] == message_id
