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
        # The main thread's actions kept for the children: in a file from the first bytes.
        monkeypatch.setattr(export_stream, "SPOOL_MEMORY", 8)


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


def _node(key: int, parent: int | None, role: str, parts: list[Any], at: str, **meta: Any) -> Any:
    return {
        **_message(key, parent, role, parts, **meta),
        "id": f"01HZZ0A00000000000000000{key:02d}",
        "parentMessageId": None if parent is None else f"01HZZ0A00000000000000000{parent:02d}",
        "createdAt": f"2025-03-01T{at}+00:00",
    }


def _tree_thread(active: int = 8) -> Thread:
    """A tree: the main path (1-8), branches at depths 1, 2, 3 and 6, a nested fork (20-24),
    leaves at the same instant (their order falls to their anchors), a leaf before its
    parent, a leaf without actions, a result whose call is in the shared prefix, an orphan,
    annotations, an agent only the shared prefix's actions name and one only a branch's."""
    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "look", "input": {"q": 1}}
    call2 = {**call, "toolCallId": "c2"}

    def result(call_id: str) -> dict[str, Any]:
        return {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": "look",
            "output": {"n": 2.5},
            "isError": False,
        }

    same = "11:00:00"
    messages = [
        _node(1, None, "system", [_text("rules ✓")], "10:00:00"),
        _node(2, 1, "user", [_text("q")], "10:01:00"),
        _node(3, 2, "assistant", [_text("looking"), call, call2], "10:02:00", agentId="finder"),
        _node(4, 3, "tool", [result("c1"), _text("seen")], "10:03:00", agentId="prefix-tool"),
        _node(5, 4, "user", [_text("and?")], "10:04:00"),
        _node(
            6,
            5,
            "assistant",
            [_text("so")],
            "10:05:00.5",
            annotations=[{"action_type": "system.note", "data": {"x": 1}}],
        ),
        _node(7, 6, "user", [_text("thanks")], "10:06:00"),
        _node(8, 7, "assistant", [_text("welcome")], "10:07:00"),
        _node(20, 1, "user", [_text("another start")], "10:10:00"),
        _node(21, 20, "assistant", [_text("fine")], "10:11:00", agentId="nested"),
        _node(22, 21, "user", [_text("deeper")], "10:12:00"),
        _node(23, 21, "user", [_text("sideways")], same),
        _node(24, 22, "assistant", [_text("deepest")], same, agentId=""),
        _node(30, 3, "tool", [result("c2")], "10:20:00"),
        _node(31, 30, "assistant", [_text("found")], same, agentId="finder"),
        _node(32, 3, "tool", [result("gone")], "09:00:00"),
        _node(40, 6, "user", [], "10:30:00"),
        _node(41, 2, "assistant", [{"type": "reasoning", "text": "hm"}], "10:40:00"),
        _node(42, 7, "tool", [_text("branch tool text")], "10:50:00", agentId="tool-branch"),
    ]
    document = {
        "format": "transcripts.message_schema",
        "version": 1,
        "thread": {
            "id": None,
            "title": "Tree ✓",
            "metadata": {"n": 0.5},
            "agents": {"finder": {"agent_name": "F"}},
            "parentThreadId": None,
            "createdAt": "2025-03-01T09:30:00+00:00",
            "updatedAt": "2025-03-01T12:00:00+00:00",
            "activeLeafId": f"01HZZ0A00000000000000000{active:02d}",
        },
        "messages": messages,
    }
    [thread_id] = interchange.import_data(document, project=_project()).thread_ids
    return Thread.objects.get(pk=thread_id)


def _lines(exported: bytes) -> list[dict[str, Any]]:
    text = exported.decode()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.split("\n")[:-1]]


@pytest.mark.parametrize(
    "leaf",
    [
        None,
        "01HZZ0A0000000000000000024",
        "01HZZ0A0000000000000000005",
        "01HZZ0A0000000000000000040",
    ],
)
def test_a_tree_s_branches_at_every_depth_stream_as_they_export(
    batches: None, leaf: str | None
) -> None:
    documents = _lines(_same(_tree_thread(), leaf=leaf, branches="all"))
    main, children = documents[0], documents[1:]
    # Every leaf but the main thread's has its child thread, each naming its fork.
    assert len(children) == (8 if leaf == "01HZZ0A0000000000000000005" else 7)
    assert all(child["parent_thread_id"] == main["thread_id"] for child in children)
    assert len({child["thread_id"] for child in children}) == len(children)
    forks = {child["metadata"]["fork_from_action_id"] for child in children}
    assert forks <= {a["action_id"] for a in main["actions"]}
    named = {a["agent_id"] for c in documents for a in c["actions"] if "agent_id" in a}
    assert all(a in c["agents"] for c in documents for a in named & set(c["agents"]))


def test_a_child_thread_s_shared_messages_are_not_read_again(
    batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each child's document begins with the main thread's first actions: they are written
    # from the main thread's text, kept as it was written, so only the messages after the
    # fork are read (twice: once for what the child's document says first, once as it is
    # written), never the shared ones again.
    from transcripts.interchange import export_stream

    thread = _tree_thread()
    reads: list[list[str]] = []
    path = export_stream._path

    def counted(order: bytes) -> Any:
        reads.append([])
        for message in path(order):
            reads[-1].append(message["id"])
            yield message

    monkeypatch.setattr(export_stream, "_path", counted)
    documents = _lines(_same(thread, branches="all"))
    main = [f"01HZZ0A00000000000000000{key:02d}" for key in range(1, 9)]
    # The main path (twice here: first for the agents a tool message's text names).
    assert reads[:2] == [main, main]
    tails = [key for read in reads[2:] for key in read]
    assert not set(main) & set(tails)
    # Each child's messages after its fork: the path from its leaf up to the main thread.
    parents = dict(thread.messages.values_list("id", "parent_id"))
    leaves = set(parents) - set(parents.values()) - {main[-1]}
    own = []
    for leaf in leaves:
        key: str | None = leaf
        while key is not None and key not in main:
            own.append(key)
            key = parents[key]
    assert sorted(tails) == sorted(2 * own)
    assert len(documents) == 1 + len(leaves)
    assert sum(len(d["actions"]) for d in documents[1:]) > len(own)  # shared ones too


def test_a_tree_whose_head_is_on_a_nested_branch_streams_as_it_exports(batches: None) -> None:
    _same(_tree_thread(active=23), branches="all")
    _same(_tree_thread(active=32), branches="all")


def test_a_tree_s_documents_imported_back_stream_as_they_export(batches: None) -> None:
    documents = _lines(_same(_tree_thread(), branches="all"))
    imported = interchange.import_data(documents, project=_project()).thread_ids
    # The children that export back as they were join their parent as branches.
    assert len(imported) < len(documents)
    first = Thread.objects.get(pk=imported[0])
    again = _lines(_same(first, branches="all"))
    assert len(again) > 1
    assert again[0] == documents[0]
    _same(first, leaf=Message.objects.filter(thread=first).order_by("-depth", "-id")[0].id)
    _same(
        first,
        leaf=Message.objects.filter(thread=first).order_by("depth", "id")[2].id,
        branches="all",
    )
    for thread_id in imported[1:]:
        _same(Thread.objects.get(pk=thread_id), branches="all")


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(document=threadprotocol_threads(max_actions=8))
def test_imported_documents_stream_every_branch_as_they_export(document: dict[str, Any]) -> None:
    [thread_id] = interchange.import_data(document, project=_project()).thread_ids
    _same(Thread.objects.get(pk=thread_id), branches="all")
