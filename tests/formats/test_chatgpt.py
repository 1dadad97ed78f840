"""ChatGPT conversations.json: every branch, hidden messages, tools, and streaming import."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from transcripts.errors import FormatError
from transcripts.formats.chatgpt import import_chatgpt, iter_chatgpt
from transcripts.formats.document import TreeThread, active_path

FIXTURE = Path(__file__).parent / "fixtures" / "chatgpt_conversations.json"


def conversations() -> Any:
    """The parsed sample export."""
    return json.loads(FIXTURE.read_text())


def by_id(thread: TreeThread) -> dict[str, dict[str, Any]]:
    """The thread's messages by key."""
    return {message["id"]: message for message in thread.messages}


def test_it_keeps_every_branch_and_the_current_node() -> None:
    first, second = import_chatgpt(conversations())
    assert first.id == "6650a1b2-0000-4000-8000-000000000001"
    assert first.title == "Plotting a sine wave"
    assert first.active_leaf == "a-final"
    assert "root" not in by_id(first)
    messages = by_id(first)
    # The regeneration and the edit stay in the tree, off the active path.
    assert messages["a-1b"]["parentMessageId"] == "u-1"
    assert messages["u-1-edit"]["parentMessageId"] == "ctx-1"
    assert [m["id"] for m in active_path(first)] == [
        "sys-1",
        "ctx-1",
        "u-1",
        "th-1",
        "rr-1",
        "code-1",
        "exec-1",
        "img-1",
        "a-final",
    ]
    ids = [m["id"] for m in first.messages]
    assert all(
        ids.index(m["parentMessageId"]) < ids.index(m["id"])
        for m in first.messages
        if m["parentMessageId"]
    )
    assert second.id == "6650a1b2-0000-4000-8000-000000000002"


def test_it_reparents_children_of_null_message_roots() -> None:
    _, second = import_chatgpt(conversations())
    assert second.messages[0]["id"] == "b-user"
    assert second.messages[0]["parentMessageId"] is None


def test_it_converts_epoch_times_to_iso_utc() -> None:
    first, _ = import_chatgpt(conversations())
    assert first.created_at == "2024-06-01T12:00:00.123Z"
    assert by_id(first)["u-1"]["createdAt"] == "2024-06-01T12:00:01.123Z"
    assert by_id(first)["sys-1"]["createdAt"] is None


def test_it_keeps_hidden_messages_marked_hidden() -> None:
    messages = by_id(import_chatgpt(conversations())[0])
    assert messages["sys-1"]["metadata"]["hidden"] is True
    assert messages["ctx-1"]["metadata"]["hidden"] is True
    assert messages["ctx-1"]["parts"] == [
        {"type": "text", "text": "I am a physics teacher.\n\nAnswer briefly."}
    ]
    assert messages["code-1"]["metadata"]["hidden"] is True
    assert "hidden" not in messages["u-1"]["metadata"]


def test_it_turns_code_into_a_tool_call_answered_by_the_execution_output() -> None:
    messages = by_id(import_chatgpt(conversations())[0])
    call = messages["code-1"]["parts"][0]
    assert call["type"] == "tool-call"
    assert call["toolName"] == "python"
    assert call["toolCallId"] == "code-1"
    assert call["input"]["code"].startswith("import numpy")
    result = messages["exec-1"]["parts"][0]
    assert result == {
        "type": "tool-result",
        "toolCallId": "code-1",
        "toolName": "python",
        "output": "<Figure size 640x480 with 1 Axes>",
        "isError": False,
    }
    assert messages["exec-1"]["role"] == "tool"


def test_it_reads_thoughts_and_reasoning_recaps_as_reasoning() -> None:
    messages = by_id(import_chatgpt(conversations())[0])
    assert messages["th-1"]["parts"] == [
        {"type": "reasoning", "text": "Planning the plot\n\nUse numpy linspace and matplotlib."}
    ]
    assert messages["rr-1"]["parts"] == [{"type": "reasoning", "text": "Thought for 4 seconds"}]
    assert messages["th-1"]["metadata"]["model"] == "o3"


def test_it_keeps_image_pointers_as_file_parts() -> None:
    messages = by_id(import_chatgpt(conversations())[0])
    image, text = messages["u-1-edit"]["parts"]
    assert image == {"type": "file", "mimeType": "image/*", "url": "sediment://file_00000000abcd"}
    assert text["text"] == "Plot a cosine wave like this one instead."
    assert messages["img-1"]["parts"][1]["url"] == "file-service://file-Abc123"
    pointer = messages["u-1-edit"]["metadata"]["extra"]["chatgpt"]["content"]["parts"][0]
    assert pointer["width"] == 100


def test_it_keeps_model_finish_reason_and_raw_metadata() -> None:
    messages = by_id(import_chatgpt(conversations())[0])
    final = messages["a-final"]["metadata"]
    assert final["model"] == "o3"
    assert final["finishReason"] == "stop"
    assert final["extra"]["chatgpt"]["metadata"]["finish_details"] == {"type": "stop"}


def test_it_reads_browsing_tool_messages() -> None:
    messages = by_id(import_chatgpt(conversations())[1])
    assert messages["b-search"]["parts"][0]["toolName"] == "browser"
    assert messages["b-search"]["parts"][0]["input"] == {"text": 'search("Paris weather today")'}
    quote = messages["b-quote"]
    assert quote["parts"][0]["output"] == "Today: 18°C, cloudy."
    assert (
        quote["metadata"]["extra"]["chatgpt"]["content"]["url"] == "https://weather.example/paris"
    )
    assert messages["b-error"]["parts"][0]["isError"] is True


def test_it_accepts_the_wrapped_and_single_conversation_shapes() -> None:
    data = conversations()
    assert import_chatgpt({"conversations": data}) == import_chatgpt(data)
    assert import_chatgpt(data[1]) == import_chatgpt(data)[1:]


def test_it_streams_the_same_threads_as_the_full_import() -> None:
    raw = FIXTURE.read_bytes()
    assert list(iter_chatgpt(io.BytesIO(raw))) == import_chatgpt(conversations())
    wrapped = b'  \n{"conversations": ' + raw + b"}"
    assert list(iter_chatgpt(io.BytesIO(wrapped))) == import_chatgpt(conversations())


def test_streaming_reports_broken_json_and_bad_conversations() -> None:
    with pytest.raises(FormatError) as caught:
        list(iter_chatgpt(io.BytesIO(b'[{"mapping": {}}, {"mapping": ')))
    assert caught.value.problems[0][0] == "$[1]"
    with pytest.raises(FormatError) as caught:
        list(iter_chatgpt(io.BytesIO(b'[{"mapping": {}}, {"mapping": 3}]')))
    assert caught.value.problems == [("$[1].mapping", "expected an object, got number")]
    with pytest.raises(FormatError):
        list(iter_chatgpt(io.BytesIO(b'"text"')))
    assert list(iter_chatgpt(io.BytesIO(b"  "))) == []


def test_it_rejects_malformed_conversations_with_paths() -> None:
    bad = [
        {"mapping": {"a": {"parent": 5, "children": []}}},
        {"mapping": {"a": {"parent": None, "children": "b"}}},
        {
            "mapping": {
                "a": {
                    "parent": None,
                    "children": [],
                    "message": {"author": {"role": "robot"}, "content": {"content_type": "text"}},
                }
            }
        },
        {"mapping": {"a": {"parent": None, "children": [], "message": {"content": {}}}}},
        "not a conversation",
    ]
    with pytest.raises(FormatError) as caught:
        import_chatgpt(bad)
    assert [path for path, _ in caught.value.problems] == [
        "$[0].mapping.a.parent",
        "$[1].mapping.a.children",
        "$[2].mapping.a.message.author.role",
        "$[3].mapping.a.message.author",
        "$[4]",
    ]


LARGE_IMPORT = textwrap.dedent(
    """
    import json, sys
    from transcripts.formats.chatgpt import iter_chatgpt

    path, conversations, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(path, "w") as out:
        out.write("[")
        for c in range(conversations):
            mapping = {"root": {"id": "root", "parent": None, "children": ["n0"], "message": None}}
            for n in range(per):
                mapping[f"n{n}"] = {
                    "id": f"n{n}",
                    "parent": "root" if n == 0 else f"n{n - 1}",
                    "children": [f"n{n + 1}"] if n + 1 < per else [],
                    "message": {
                        "id": f"n{n}",
                        "author": {"role": "user" if n % 2 == 0 else "assistant"},
                        "create_time": 1717243200.5 + n,
                        "content": {"content_type": "text", "parts": [f"message {n} " * 20]},
                        "status": "finished_successfully",
                        "recipient": "all",
                        "metadata": {"model_slug": "gpt-4o"},
                    },
                }
            conversation = {
                "id": f"c{c}",
                "title": f"Conversation {c}",
                "create_time": 1717243200.0,
                "current_node": f"n{per - 1}",
                "mapping": mapping,
            }
            out.write(("," if c else "") + json.dumps(conversation))
        out.write("]")
    threads = messages = 0
    with open(path, "rb") as source:
        for thread in iter_chatgpt(source):
            threads += 1
            messages += len(thread.messages)
    # VmHWM is this program's own peak: ru_maxrss would include the forking pytest process.
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"threads": threads, "messages": messages, "peak_mb": peak_kb / 1024}))
    """
)


def test_a_large_export_streams_in_bounded_memory(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", LARGE_IMPORT, str(tmp_path / "big.json"), "2000", "100"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    report = json.loads(result.stdout)
    assert report["threads"] == 2000
    assert report["messages"] == 200_000
    assert report["peak_mb"] <= 300


def test_streaming_reads_a_single_conversation_object_whole() -> None:
    single = json.dumps(conversations()[1]).encode()
    assert (
        list(iter_chatgpt(io.BytesIO(b"\xef\xbb\xbf " + single)))
        == import_chatgpt(conversations())[1:]
    )
    assert list(iter_chatgpt(io.BytesIO(b'{"conversations": []}'))) == []
    with pytest.raises(FormatError):
        list(iter_chatgpt(io.BytesIO(b"{}")))
    with pytest.raises(FormatError):
        list(iter_chatgpt(io.BytesIO(b'{"mapping": ')))


def test_browsing_displays_are_hidden_as_chatgpt_hides_them() -> None:
    messages = by_id(import_chatgpt(conversations())[1])
    assert messages["b-display"]["metadata"]["hidden"] is True
    assert "hidden" not in messages["b-answer"]["metadata"]
