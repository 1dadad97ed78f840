"""The streamed ThreadProtocol export (one document: the active path, or the path to a leaf)
reads its header from the thread's row and what PostgreSQL says of the messages, then the
path a batch at a time: these tests prove it writes `export_thread`'s bytes, which still reads
the whole tree, on threads that test every part of the header (agents from metadata, from
tool messages with text, from records; branches, tool calls and results, orphans, unicode,
failed runs, a leaf, imported and redacted documents) with batches of one and two."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.factories import make_thread
from tests.formats.threadprotocol_strategies import threadprotocol_threads
from tests.interchange.test_export_text import _odd_thread
from transcripts import interchange
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import create_project
from transcripts.models import Message, Thread

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
EXAMPLE = json.loads((FIXTURES / "threadprotocol_example.json").read_text())
_projects = itertools.count()


def _streamed(thread: Thread, **options: Any) -> bytes:
    exported = interchange.stream_thread(thread, "threadprotocol", **options)
    return b"".join(interchange.chunked(exported.pieces))


def _same(thread: Thread, **options: Any) -> bytes:
    whole = interchange.export_thread(thread, "threadprotocol", **options).content.encode()
    streamed = _streamed(thread, **options)
    assert streamed == whole
    return streamed


@pytest.fixture(params=["default", "one", "two"])
def batches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    from transcripts.interchange import export_stream

    if request.param != "default":
        size = 1 if request.param == "one" else 2
        monkeypatch.setattr(export_stream, "MESSAGE_BATCH", size)
        monkeypatch.setattr(export_stream, "ACTION_BATCH", size)
        monkeypatch.setattr(export_stream, "CHUNK_BYTES", 50)


def _message(key: int, parent: int | None, role: str, parts: list[Any], **metadata: Any) -> Any:
    return {
        "id": f"01HZZ0900000000000000000{key:02d}",
        "parentMessageId": None if parent is None else f"01HZZ0900000000000000000{parent:02d}",
        "role": role,
        "parts": parts,
        "createdAt": f"2025-03-01T10:{key:02d}:00+00:00",
        "metadata": {"schemaVersion": 1, **metadata},
    }


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _agents_thread(leaf: int = 12) -> Thread:
    """Agents named every way the header must know of: the thread's registry, agentId as a
    string, a number, empty; a tool message with text (its assistant_message names an agent
    only the path shows), a reasoning user, an orphan result, an annotation, branches."""
    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "look", "input": {"q": "é"}}
    result = {
        "type": "tool-result",
        "toolCallId": "c1",
        "toolName": "look",
        "output": {"n": 1.5},
        "isError": False,
    }
    orphan = {**result, "toolCallId": "gone"}
    messages = [
        _message(1, None, "system", [_text("be kind — ✓")]),
        _message(2, 1, "user", [_text("héllo 🎉\u2028")]),
        _message(3, 2, "assistant", [_text("hi"), call], agentId="planner", finishReason="stop"),
        _message(4, 3, "tool", [result, _text("also text")], agentId="toolsmith"),
        _message(5, 4, "tool", [orphan]),
        _message(6, 5, "user", [{"type": "reasoning", "text": "hm"}], agentId=7),
        _message(7, 6, "assistant", [], agentId=""),
        _message(
            8,
            7,
            "assistant",
            [_text("noted")],
            annotations=[{"action_type": "system.note", "data": {"x": 1}}],
        ),
        _message(9, 2, "assistant", [_text("other branch")], agentId="branchy"),
        _message(10, 9, "tool", [_text("branch tool text")], agentId="branch-tool"),
        _message(11, 8, "user", [_text("more")]),
        _message(12, 11, "assistant", [_text("done")], agentId="closer"),
    ]
    document = {
        "format": "transcripts.message_schema",
        "version": 1,
        "thread": {
            "id": None,
            "title": "Agents ✓",
            "metadata": {"team": "stream", "n": 0.5},
            "agents": {"helper": {"agent_name": "Helper"}, "planner": {"agent_name": "P"}},
            "parentThreadId": None,
            "createdAt": "2025-03-01T10:00:00.250000+00:00",
            "updatedAt": "2025-03-01T10:30:00+00:00",
            "activeLeafId": f"01HZZ0900000000000000000{leaf:02d}",
        },
        "messages": messages,
    }
    [thread_id] = interchange.import_data(document, project=default_project()).thread_ids
    return Thread.objects.get(pk=thread_id)


def _project() -> Any:
    return create_project(slug=f"stream-{next(_projects)}")


@pytest.mark.parametrize("leaf", [None, "01HZZ010000000000000000004"])
def test_odd_threads_stream_as_they_export(batches: None, leaf: str | None) -> None:
    thread = _odd_thread()
    document = json.loads(_same(thread, leaf=leaf))
    assert document["actions"]


@pytest.mark.parametrize("leaf", [None, "01HZZ090000000000000000005", "01HZZ090000000000000000010"])
def test_every_agent_is_in_the_header_as_in_the_whole_export(
    batches: None, leaf: str | None
) -> None:
    document = json.loads(_same(_agents_thread(), leaf=leaf))
    # (agentId 7 is written as the number it is, and registered as "7".)
    named = {a["agent_id"] for a in document["actions"] if isinstance(a.get("agent_id"), str)}
    assert named <= set(document["agents"])
    assert {"helper", "planner", "7", "assistant", "branchy"} <= set(document["agents"])


def test_a_tool_message_with_text_names_an_agent_only_its_path_shows(batches: None) -> None:
    document = json.loads(_same(_agents_thread(), leaf="01HZZ090000000000000000010"))
    assert "branch-tool" in document["agents"]
    assert "branch-tool" not in json.loads(_same(_agents_thread()))["agents"]


def test_a_head_that_is_gone_streams_the_last_message_s_path(batches: None) -> None:
    thread = _agents_thread()
    Thread.objects.filter(pk=thread.pk).update(head=None)
    _same(Thread.objects.get(pk=thread.pk))


def test_an_empty_thread_streams_as_it_exports() -> None:
    _same(make_thread("nothing yet ✓"))


def test_an_imported_document_streams_back_as_it_exports(batches: None) -> None:
    [thread_id] = interchange.import_data(EXAMPLE, project=_project()).thread_ids
    thread = Thread.objects.get(pk=thread_id)
    assert json.loads(_same(thread)) == EXAMPLE


def test_an_imported_document_with_a_stale_record_streams_as_it_exports(batches: None) -> None:
    example = copy.deepcopy(EXAMPLE)
    [thread_id] = interchange.import_data(example, project=_project()).thread_ids
    thread = Thread.objects.get(pk=thread_id)
    # A message whose parts no longer fit its record (as a redaction leaves it), named by an
    # agent no registry holds: the actions are derived, and the header must name it.
    message = Message.objects.filter(thread=thread, role="assistant").order_by("depth").first()
    assert message is not None
    message.parts = [_text("changed")]
    message.metadata = {**message.metadata, "agentId": "newcomer"}
    message.save(update_fields=["parts", "metadata"])
    document = json.loads(_same(thread))
    assert "newcomer" in document["agents"]


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(document=threadprotocol_threads(max_actions=8))
def test_imported_documents_stream_as_they_export(document: dict[str, Any]) -> None:
    [thread_id] = interchange.import_data(document, project=_project()).thread_ids
    _same(Thread.objects.get(pk=thread_id))


@pytest.mark.parametrize("leaf", [None, "01HZZ090000000000000000010"])
def test_every_branch_streams_as_it_exports(batches: None, leaf: str | None) -> None:
    lines = _same(_agents_thread(), leaf=leaf, branches="all").decode().split("\n")[:-1]
    assert len(lines) > 1
    assert json.loads(lines[1])["parent_thread_id"] == json.loads(lines[0])["thread_id"]
    _same(_odd_thread(), branches="all")


def test_an_imported_document_s_branches_stream_as_they_export(batches: None) -> None:
    [thread_id] = interchange.import_data(EXAMPLE, project=_project()).thread_ids
    _same(Thread.objects.get(pk=thread_id), branches="all")
