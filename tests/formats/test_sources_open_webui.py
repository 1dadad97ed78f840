"""Open WebUI chat exports: the history tree, currentId, details blocks, output items, files."""

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
from transcripts.formats.open_webui import import_open_webui
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Thread


def chats() -> Any:
    """The sample export."""
    return sample("open_webui_export.json")


def by_id(thread: TreeThread) -> dict[str, dict[str, Any]]:
    """The thread's messages by id."""
    return {message["id"]: message for message in thread.messages}


def test_it_is_detected() -> None:
    assert detect_format(chats()) == "open-webui"
    assert detect_format(chats()[0]) == "open-webui"


def test_every_branch_is_kept_and_current_id_is_the_active_leaf() -> None:
    maths, oslo = import_open_webui(chats())
    # Two models answered the first prompt; the second answer to u2 failed.
    assert sorted(leaves(maths)) == ["r2", "t1", "t2"]
    assert maths.active_leaf == "t1"
    assert [m["id"] for m in active_path(maths)] == ["u1", "r1", "u2", "t1"]
    assert by_id(maths)["r2"]["metadata"]["model"] == "gpt-4o"
    assert maths.title == "Maths and weather" and maths.id == "owui-chat-1"
    assert maths.created_at == "2026-01-01T20:40:00Z"
    assert maths.metadata["extra"]["open_webui"]["meta"] == {"tags": ["maths"]}
    assert oslo.active_leaf == "q2"


def test_details_blocks_become_reasoning_and_tool_parts() -> None:
    messages = by_id(import_open_webui(chats())[0])
    assert messages["r1"]["parts"] == [
        {"type": "reasoning", "text": "15 * 17 = 150 + 105\n= 255"},
        {"type": "text", "text": "255"},
    ]
    call, result, text = messages["t1"]["parts"]
    assert call == {
        "type": "tool-call",
        "toolCallId": "call_1",
        "toolName": "get_weather",
        "input": {"city": "Paris"},
    }
    assert result["output"] == "Paris: 18C, rain" and result["toolCallId"] == "call_1"
    assert text == {"type": "text", "text": "It is 18C with rain in Paris."}
    assert messages["t1"]["metadata"]["extra"]["open_webui"]["content"].startswith("<details")


def test_output_items_win_over_the_content_they_were_rendered_into() -> None:
    messages = by_id(import_open_webui(chats())[1])
    call, result, text = messages["q2"]["parts"]
    assert call["input"] == {"city": "Oslo"}
    assert result == {
        "type": "tool-result",
        "toolCallId": "call_9",
        "toolName": "get_weather",
        "output": "Oslo: -3C, snow",
        "isError": False,
    }
    assert text["text"] == "Snowing in Oslo."


def test_files_and_errors_are_kept_or_labelled() -> None:
    skips = Skips()
    messages = by_id(import_open_webui(chats(), skips)[0])
    text, image, server_file = messages["u1"]["parts"]
    assert text == {"type": "text", "text": "What is 15 * 17?"}
    assert image["type"] == "file" and image["mimeType"] == "image/png"
    assert image["name"] == "sum.png"
    assert server_file == {"type": "text", "text": "[file not in the export: homework.pdf]"}
    assert messages["t2"]["parts"] == [
        {"type": "text", "text": "[error]\n\nConnection to the model was lost."}
    ]
    assert [(s.what, s.why) for s in skips.items] == [
        ("file homework.pdf", "kept on the Open WebUI server, not exported")
    ]
    assert skips.counts["labelled"] == 2


def test_a_chat_without_history_reads_its_linear_messages() -> None:
    chat = chats()[0]
    del chat["chat"]["history"]
    [thread] = import_open_webui([chat])
    assert [m["id"] for m in active_path(thread)] == ["u1", "r1", "u2", "t1"]


def test_unknown_roles_are_skipped_and_bad_shapes_refused() -> None:
    data = chats()
    data[1]["chat"]["history"]["messages"]["q1"]["role"] = "function"
    skips = Skips()
    [_, oslo] = import_open_webui(data, skips)
    assert [m["id"] for m in oslo.messages] == ["q2"]
    assert oslo.messages[0]["parentMessageId"] is None
    assert ("message", "role 'function' is not user, assistant or system") in [
        (s.what, s.why) for s in skips.items
    ]
    with pytest.raises(FormatError) as caught:
        import_open_webui([{"chat": 1}, {"chat": {"history": {"messages": {"a": 2}}}}])
    assert [path for path, _ in caught.value.problems] == [
        "$[0].chat",
        "$[1].chat.history.messages.a",
    ]


@pytest.mark.django_db
def test_the_export_imports_every_branch_with_a_report() -> None:
    raw = (SOURCES / "open_webui_export.json").read_bytes()
    result = interchange.import_stream(io.BytesIO(raw), project=default_project())
    assert result.format == "open-webui"
    report = result.report
    assert (report["threads"], report["messages"], report["branches"]) == (2, 8, 4)
    assert report["skippedTotal"] == 1 and report["labelled"] == 2
    maths = Thread.objects.get(pk=result.thread_ids[0])
    assert Message.objects.filter(thread=maths).count() == 6
    assert Message.objects.get(thread=maths, active=True, depth=3).parts[2]["text"] == (
        "It is 18C with rain in Paris."
    )


@pytest.mark.django_db
def test_a_broken_export_imports_nothing() -> None:
    before = Thread.objects.count()
    data = chats()
    data[1]["chat"]["history"]["messages"]["q2"]["parentId"] = 7
    with pytest.raises(InvalidInput):
        interchange.import_stream(io.BytesIO(json.dumps(data).encode()), project=default_project())
    assert Thread.objects.count() == before


def test_a_parent_cycle_is_broken_and_reported() -> None:
    data = chats()
    history = data[1]["chat"]["history"]["messages"]
    history["q1"]["parentId"] = "q2"
    skips = Skips()
    [_, oslo] = import_open_webui(data, skips)
    assert [(m["id"], m["parentMessageId"]) for m in oslo.messages] == [
        ("q1", None),
        ("q2", "q1"),
    ]
    assert skips.items[-1].why == "parent q2 closes a cycle: made a root"
