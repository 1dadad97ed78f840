"""LibreChat exports: the recursive tree and the flat list, agent content, the shown branch."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.formats.sources import SOURCES, sample
from transcripts import interchange
from transcripts.errors import FormatError, InvalidInput
from transcripts.formats import Skips, TreeThread, detect_format
from transcripts.formats.document import active_path, leaves
from transcripts.formats.librechat import import_librechat
from transcripts.ledger.default_project import default_project
from transcripts.models import Thread


def by_id(thread: TreeThread) -> dict[str, dict[str, Any]]:
    """The thread's messages by id."""
    return {message["id"]: message for message in thread.messages}


def test_both_shapes_are_detected() -> None:
    assert detect_format(sample("librechat_tree.json")) == "librechat"
    assert detect_format(sample("librechat_flat.json")) == "librechat"
    assert detect_format([sample("librechat_flat.json")]) == "librechat"


def test_the_recursive_tree_keeps_every_branch_and_opens_the_newest() -> None:
    [thread] = import_librechat(sample("librechat_tree.json"))
    assert sorted(leaves(thread)) == ["l-a1", "l-u2"]
    assert [m["id"] for m in active_path(thread)] == ["l-u1", "l-a2", "l-u2"]
    assert thread.id == "lc-0001" and thread.title == "Agent research"
    assert thread.created_at == "2026-03-01T10:00:00Z"
    assert thread.metadata["extra"]["librechat"]["options"]["agent_id"] == "agent_1"


def test_agent_content_becomes_reasoning_tool_call_and_result() -> None:
    messages = by_id(import_librechat(sample("librechat_tree.json"))[0])
    think, call, result, text = messages["l-a1"]["parts"]
    assert think == {"type": "reasoning", "text": "Search for towers."}
    assert call == {
        "type": "tool-call",
        "toolCallId": "call_a",
        "toolName": "web_search",
        "input": {"q": "tallest tower Lisbon"},
    }
    assert result["output"] == "Torre Vasco da Gama, 145 m"
    assert text == {"type": "text", "text": "Torre Vasco da Gama (145 m)."}
    assert messages["l-a1"]["metadata"]["model"] == "gpt-4.1"
    assert messages["l-a1"]["metadata"]["finishReason"] == "stop"


def test_unknown_parts_and_server_files_are_labelled_and_reported() -> None:
    skips = Skips()
    messages = by_id(import_librechat(sample("librechat_tree.json"), skips)[0])
    assert messages["l-a2"]["parts"] == [
        {"type": "text", "text": "The Torre Vasco da Gama, at 145 m."},
        {"type": "text", "text": "[LibreChat agent_update part]"},
        {"type": "text", "text": "[file not in the export: tower.png]"},
    ]
    assert [s.what for s in skips.items] == ["agent_update part", "file tower.png"]


def test_a_flat_export_with_an_edited_first_turn_has_two_roots() -> None:
    [thread] = import_librechat(sample("librechat_flat.json"))
    messages = by_id(thread)
    assert messages["f-u1"]["parentMessageId"] is None
    assert messages["f-u1b"]["parentMessageId"] is None
    assert [m["id"] for m in active_path(thread)] == ["f-u1b", "f-a1b"]
    # The assistant without its own model takes the conversation's.
    assert messages["f-a1b"]["metadata"]["model"] == "gpt-4o"
    assert messages["f-a1b"]["metadata"]["extra"]["librechat"]["unfinished"] is False


def test_a_missing_parent_is_reported_and_bad_shapes_refused() -> None:
    data = sample("librechat_flat.json")
    data["messages"][1]["parentMessageId"] = "gone"
    skips = Skips()
    [thread] = import_librechat(data, skips)
    assert by_id(thread)["f-a1"]["parentMessageId"] is None
    assert skips.items[0].why == "parent gone is not in the export: made a root"
    with pytest.raises(FormatError) as caught:
        import_librechat({"conversationId": "x", "messages": [{"messageId": 3}, 4]})
    assert [path for path, _ in caught.value.problems] == [
        "$.messages[0].messageId",
        "$.messages[1]",
    ]


@pytest.mark.django_db
def test_both_exports_import_every_branch_with_a_report() -> None:
    for name, branches in (("librechat_tree.json", 2), ("librechat_flat.json", 2)):
        raw = (SOURCES / name).read_bytes()
        result = interchange.import_stream(io.BytesIO(raw), project=default_project())
        assert result.format == "librechat"
        assert result.report["threads"] == 1 and result.report["branches"] == branches
        thread = Thread.objects.get(pk=result.thread_ids[0])
        assert thread.head_id is not None


@pytest.mark.django_db
def test_a_duplicate_message_id_imports_nothing() -> None:
    data = sample("librechat_flat.json")
    data["messages"][2]["messageId"] = "f-u1"
    before = Thread.objects.count()
    with pytest.raises(InvalidInput) as caught:
        interchange.import_stream(io.BytesIO(json.dumps(data).encode()), project=default_project())
    assert "duplicate message id" in caught.value.message
    assert Thread.objects.count() == before
