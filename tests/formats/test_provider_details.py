"""Provider rules that the round-trip properties do not reach on their own."""

from __future__ import annotations

from typing import Any

from tests.formats.helpers import through_json
from transcripts.formats.ai_sdk_messages import export_ai_sdk, import_ai_sdk
from transcripts.formats.anthropic import export_anthropic, import_anthropic
from transcripts.formats.document import linear_thread, make_message
from transcripts.formats.gemini import import_gemini
from transcripts.formats.openai import export_openai, import_openai
from transcripts.formats.pydantic_ai import export_pydantic_ai, import_pydantic_ai


def text(value: str) -> dict[str, Any]:
    """A text part."""
    return {"type": "text", "text": value}


def test_ai_sdk_keeps_v6_approval_states_through_a_round_trip() -> None:
    ui_messages = [
        {"id": "u1", "role": "user", "parts": [text("delete the file")]},
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-deleteFile",
                    "toolCallId": "c1",
                    "state": "approval-requested",
                    "input": {"path": "/tmp/x"},
                    "approval": {"id": "ap1"},
                },
                {
                    "type": "tool-deleteFile",
                    "toolCallId": "c2",
                    "state": "approval-responded",
                    "input": {"path": "/tmp/y"},
                    "approval": {"id": "ap2", "approved": True},
                },
                {
                    "type": "tool-deleteFile",
                    "toolCallId": "c3",
                    "state": "output-denied",
                    "input": {"path": "/etc"},
                    "approval": {"id": "ap3", "approved": False, "reason": "too risky"},
                },
                {
                    "type": "tool-search",
                    "toolCallId": "c4",
                    "state": "output-available",
                    "input": {"q": "x"},
                    "output": [1, 2],
                    "providerExecuted": True,
                },
            ],
        },
    ]
    (thread,) = import_ai_sdk(ui_messages)
    assert [m["role"] for m in thread.messages] == ["user", "assistant", "tool"]
    assert [p["toolCallId"] for p in thread.messages[1]["parts"]] == ["c1", "c2", "c3", "c4"]
    denied, found = thread.messages[2]["parts"]
    assert denied["isError"] is True and denied["output"] == "too risky"
    assert found["output"] == [1, 2]
    assert through_json(export_ai_sdk(thread)) == ui_messages


def test_ai_sdk_accepts_a_messages_wrapper() -> None:
    ui = [{"id": "u1", "role": "user", "parts": [text("hi")]}]
    assert import_ai_sdk({"messages": ui}) == import_ai_sdk(ui)


def test_anthropic_merges_consecutive_same_role_messages_and_puts_results_first() -> None:
    call = {"type": "tool-call", "toolCallId": "t1", "toolName": "f", "input": {}}
    result = {"type": "tool-result", "toolCallId": "t1", "toolName": "f", "output": 1}
    thread = linear_thread(
        [
            make_message("s", None, "system", [text("one")]),
            make_message("s2", None, "system", [text("two")]),
            make_message("u", None, "user", [text("a")]),
            make_message("u2", None, "user", [text("b")]),
            make_message("a", None, "assistant", [call]),
            make_message("t", None, "tool", [{**result, "isError": True}]),
            make_message("u3", None, "user", [text("c")]),
        ]
    )
    body = export_anthropic(thread)
    assert body["system"] == "one\n\ntwo"
    assert body["messages"] == [
        {"role": "user", "content": [text("a"), text("b")]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1", "is_error": True},
                text("c"),
            ],
        },
    ]
    (back,) = import_anthropic(body)
    assert [m["role"] for m in back.messages] == ["system", "user", "assistant", "tool", "user"]


def test_anthropic_reads_image_urls_and_block_system_prompts() -> None:
    (thread,) = import_anthropic(
        {
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
                    ],
                }
            ],
        }
    )
    assert thread.messages[0]["parts"] == [text("sys")]
    assert thread.messages[1]["parts"] == [
        {"type": "file", "mimeType": "image/*", "url": "https://x/y.png"}
    ]


def test_openai_reads_tool_names_from_the_calls_and_keeps_argument_text() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{ "a" : 1 }'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "orphan"},
    ]
    (thread,) = import_openai(messages)
    assert thread.messages[0]["parts"][0]["input"] == {"a": 1}
    assert [p["toolName"] for p in thread.messages[1]["parts"]] == ["f", ""]
    exported = export_openai(thread)["messages"]
    assert exported[0]["tool_calls"][0]["function"]["arguments"] == '{ "a" : 1 }'
    assert exported[0] == {k: v for k, v in messages[0].items() if v is not None}


def test_gemini_splits_a_user_content_into_tool_results_and_text() -> None:
    (thread,) = import_gemini(
        [
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "f", "response": {"error": "boom"}}},
                    {"text": "and then?"},
                ],
            }
        ]
    )
    assert [m["role"] for m in thread.messages] == ["tool", "user"]
    assert thread.messages[0]["parts"][0] == {
        "type": "tool-result",
        "toolCallId": "f",
        "toolName": "f",
        "output": "boom",
        "isError": True,
    }


def test_pydantic_ai_reads_plain_retries_as_user_text_and_keeps_them_on_export() -> None:
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]},
        {"kind": "response", "parts": [{"part_kind": "text", "content": "bad"}]},
        {
            "kind": "request",
            "parts": [
                {
                    "part_kind": "retry-prompt",
                    "content": "Please answer in JSON",
                    "tool_name": None,
                    "tool_call_id": "r1",
                }
            ],
        },
    ]
    (thread,) = import_pydantic_ai(history)
    assert thread.messages[2]["role"] == "user"
    assert thread.messages[2]["parts"] == [text("Please answer in JSON")]
    assert export_pydantic_ai(thread) == history


def test_pydantic_ai_maps_usage_to_camel_case_and_keeps_the_raw_usage() -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 2, "details": {"x": 1}}
    (thread,) = import_pydantic_ai([{"kind": "response", "parts": [], "usage": usage}])
    metadata = thread.messages[0]["metadata"]
    assert metadata["usage"] == {
        "inputTokens": 10,
        "outputTokens": 5,
        "cachedInputTokens": 2,
        "totalTokens": 15,
    }
    assert metadata["extra"]["pydantic_ai"]["usage"] == usage
