"""Claude.ai exports: branches by parent_message_uuid, blocks, attachments, the export zip."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from tests.formats.sources import sample, zipped
from transcripts import interchange
from transcripts.errors import FormatError, InvalidInput
from transcripts.formats import Skips, TreeThread, detect_format
from transcripts.formats.claude_ai import import_claude_ai, iter_claude_ai
from transcripts.formats.document import active_path, leaves
from transcripts.ledger.default_project import default_project
from transcripts.models import Thread
from transcripts.selectors import active_path as stored_path


def conversations() -> Any:
    """The sample export's conversations.json."""
    return sample("claude_ai_export/conversations.json")


def by_id(thread: TreeThread) -> dict[str, dict[str, Any]]:
    """The thread's messages by id."""
    return {message["id"]: message for message in thread.messages}


def test_it_is_detected_as_a_list_and_as_one_conversation() -> None:
    data = conversations()
    assert detect_format(data) == "claude-ai"
    assert detect_format(data[0]) == "claude-ai"
    assert detect_format({"conversations": data}) == "claude-ai"


def test_edits_and_retries_are_sibling_branches_and_the_newest_leaf_is_active() -> None:
    trip, older = import_claude_ai(conversations())
    messages = by_id(trip)
    assert messages["h1"]["parentMessageId"] is None
    assert messages["h1-edit"]["parentMessageId"] is None
    assert messages["a1-retry"]["parentMessageId"] == "h1"
    assert sorted(leaves(trip)) == ["a1", "a2", "a3"]
    # No current_leaf_message_uuid: Claude.ai opens the newest leaf.
    assert [m["id"] for m in active_path(trip)] == ["h1-edit", "a3"]
    assert trip.id == "5c0a0000-0000-4000-8000-000000000001"
    assert trip.created_at == "2026-02-01T09:00:00Z"
    # An older export has no parent links: one chain in list order.
    assert [m["id"] for m in active_path(older)] == ["o1", "o2"]
    assert by_id(older)["o1"]["parts"] == [{"type": "text", "text": "Hello Claude"}]


def test_the_current_leaf_is_kept_when_the_export_names_it() -> None:
    data = conversations()
    data[0]["current_leaf_message_uuid"] = "a2"
    [trip, _] = import_claude_ai(data)
    assert [m["id"] for m in active_path(trip)] == ["h1", "a1-retry", "h2", "a2"]


def test_blocks_become_reasoning_tool_calls_and_results() -> None:
    messages = by_id(import_claude_ai(conversations())[0])
    thinking, call, result, text = messages["a1"]["parts"]
    assert thinking == {
        "type": "reasoning",
        "text": "They like trams and pastries: tram 28 and Belem.",
    }
    assert call == {
        "type": "tool-call",
        "toolCallId": "toolu_01",
        "toolName": "web_search",
        "input": {"query": "tram 28 timetable"},
    }
    assert result["toolCallId"] == "toolu_01" and result["isError"] is False
    assert result["output"][0]["url"] == "https://tram.example/28"
    assert text == {"type": "text", "text": "Morning: tram 28. Afternoon: pastries in Belem."}
    summaries = messages["a1"]["metadata"]["extra"]["claude_ai"]["content"][0]["summaries"]
    assert summaries == [{"summary": "Planning around trams"}]


def test_a_result_without_an_id_joins_its_call_and_odd_blocks_are_labelled() -> None:
    skips = Skips()
    messages = by_id(import_claude_ai(conversations(), skips)[0])
    call, result, voice, flag, text = messages["a2"]["parts"]
    assert call["toolName"] == "artifacts" and call["toolCallId"] == "a2:0"
    assert result["toolCallId"] == "a2:0" and result["output"] == "OK"
    assert voice == {"type": "text", "text": "[Summary]\n\nBelem first, then the tram."}
    assert flag == {"type": "text", "text": "[Claude.ai flag block]"}
    assert text["text"] == "Here is the table."
    assert ("flag block", "no part type holds it: kept as a label") in [
        (s.what, s.why) for s in skips.items
    ]


def test_attachments_keep_their_text_and_files_are_named() -> None:
    skips = Skips()
    messages = by_id(import_claude_ai(conversations(), skips)[0])
    text, notes, image = messages["h1"]["parts"]
    assert text["text"].startswith("Plan a day in Lisbon")
    assert notes["type"] == "file" and notes["name"] == "notes.txt"
    assert base64.b64decode(notes["url"].split(",", 1)[1]) == b"Likes: trams, pastries."
    assert image == {"type": "text", "text": "[file not in the export: map.jpg]"}
    assert [s.what for s in skips.items if s.what.startswith("file")] == ["file map.jpg"]


def test_a_message_of_another_sender_is_skipped_and_its_children_move_up() -> None:
    data = conversations()
    data[0]["chat_messages"][1]["sender"] = "robot"
    skips = Skips()
    messages = by_id(import_claude_ai(data, skips)[0])
    assert "a1" not in messages
    assert ("message", "sender 'robot' is neither human nor assistant") in [
        (s.what, s.why) for s in skips.items
    ]
    data[0]["chat_messages"][3]["parent_message_uuid"] = "gone"
    skips = Skips()
    messages = by_id(import_claude_ai(data, skips)[0])
    assert messages["h2"]["parentMessageId"] is None
    assert "parent gone is not in the export: made a root" in [s.why for s in skips.items]


def test_malformed_conversations_are_refused_with_paths() -> None:
    with pytest.raises(FormatError) as caught:
        import_claude_ai([{"chat_messages": 3}, {"chat_messages": [{"uuid": 5}]}, "x"])
    assert [path for path, _ in caught.value.problems] == [
        "$[0].chat_messages",
        "$[1].chat_messages[0].uuid",
        "$[2]",
    ]
    with pytest.raises(FormatError):
        list(iter_claude_ai(io.BytesIO(b'[{"chat_messages": []}, {"chat')))


def test_streaming_reads_the_same_threads() -> None:
    raw = json.dumps(conversations()).encode()
    assert list(iter_claude_ai(io.BytesIO(raw))) == import_claude_ai(conversations())
    single = json.dumps(conversations()[1]).encode()
    assert list(iter_claude_ai(io.BytesIO(b"  " + single))) == import_claude_ai(conversations())[1:]


@pytest.mark.django_db
def test_the_export_zip_imports_every_branch_with_a_report() -> None:
    result = interchange.import_stream(
        io.BytesIO(zipped("claude_ai_export")), project=default_project()
    )
    assert result.format == "claude-ai"
    report = result.report
    assert (report["threads"], report["messages"], report["branches"]) == (2, 9, 4)
    whats = [item["what"] for item in report["skipped"]]
    assert {"projects", "users", "file map.jpg", "flag block"} <= set(whats)
    trip = Thread.objects.get(pk=result.thread_ids[0])
    assert trip.title == "Trip to Lisbon"
    assert [m.parts for m in stored_path(trip)][-1] == [
        {"type": "text", "text": "Porto: Ribeira, then a port cellar."}
    ]


@pytest.mark.django_db
def test_a_bare_conversations_json_imports_too() -> None:
    raw = json.dumps(conversations()).encode()
    result = interchange.import_stream(io.BytesIO(raw), project=default_project())
    assert result.format == "claude-ai" and result.report["branches"] == 4
    with pytest.raises(InvalidInput):
        interchange.import_stream(
            io.BytesIO(b'[{"chat_messages": 5}]'), "claude-ai", project=default_project()
        )
