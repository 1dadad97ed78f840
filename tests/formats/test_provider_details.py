"""Provider rules that the round-trip properties do not reach on their own."""

from __future__ import annotations

from typing import Any

from tests.formats.helpers import through_json
from transcripts.formats.ai_sdk.messages import export_ai_sdk, import_ai_sdk
from transcripts.formats.anthropic import export_anthropic, import_anthropic
from transcripts.formats.document import linear_thread, make_message, part_fingerprint, parts_of
from transcripts.formats.gemini import export_gemini, import_gemini
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
    denied, found = parts_of(thread.messages[2])
    assert denied["isError"] is True and denied["output"] == "too risky"
    assert found["output"] == [1, 2]
    assert through_json(export_ai_sdk(thread)) == ui_messages


def test_ai_sdk_accepts_a_messages_wrapper() -> None:
    ui = [{"id": "u1", "role": "user", "parts": [text("hi")]}]
    assert import_ai_sdk({"messages": ui}) == import_ai_sdk(ui)


def test_anthropic_merges_consecutive_same_role_messages_and_puts_results_first() -> None:
    call: dict[str, Any] = {"type": "tool-call", "toolCallId": "t1", "toolName": "f", "input": {}}
    result: dict[str, Any] = {
        "type": "tool-result",
        "toolCallId": "t1",
        "toolName": "f",
        "output": 1,
    }
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
    assert exported[0] == messages[0]
    # The list content of the first tool message comes back as it was.
    assert exported[1] == messages[1]


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
    result = thread.messages[0]["parts"][0]
    # The response had no id: the part keeps that, so an export writes none either.
    assert result.pop("sourceFields") == {
        "gemini": {
            "within": {"functionResponse": {"unset": ["id"]}},
            "for": part_fingerprint(result),
        }
    }
    assert result == {
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


def test_gemini_reads_code_it_ran_as_a_code_execution_call_and_its_result() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "sum 1..10"}]},
            {
                "role": "model",
                "parts": [
                    {"executable_code": {"language": "PYTHON", "code": "print(sum(range(11)))"}},
                    {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "55\n"}},
                    {"text": "55"},
                ],
            },
        ]
    }
    (thread,) = import_gemini(body)
    call, result, answer = parts_of(thread.messages[1])
    assert (call["type"], call["toolName"], call["input"]["code"]) == (
        "tool-call",
        "code_execution",
        "print(sum(range(11)))",
    )
    assert (result["toolCallId"], result["output"]["output"], result["isError"]) == (
        call["toolCallId"],
        "55\n",
        False,
    )
    assert answer == text("55")
    # Written back in REST camelCase, as Gemini sent it.
    model_parts = export_gemini(thread)["contents"][1]["parts"]
    assert model_parts[0] == {
        "executableCode": {"language": "PYTHON", "code": "print(sum(range(11)))"}
    }
    assert model_parts[1] == {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "55\n"}}


def test_openai_writes_an_uploaded_file_back_by_its_file_id() -> None:
    content = [{"type": "file", "file": {"file_id": "file-abc"}}, text("summarise")]
    (thread,) = import_openai([{"role": "user", "content": content}])
    assert thread.messages[0]["parts"][0]["url"] == "openai-file://file-abc"
    thread.messages[0]["parts"][0].pop("sourceFields", None)
    assert export_openai(thread)["messages"][0]["content"] == content


def test_anthropic_keeps_redacted_thinking_in_its_place_and_drops_kept_fields_once_edited() -> None:
    turn = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig1"},
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
            {"type": "text", "text": "done", "cache_control": {"type": "ephemeral"}},
        ],
    }
    body = {"messages": [{"role": "user", "content": "go"}, turn]}
    (thread,) = import_anthropic(body)
    assert [p["type"] for p in thread.messages[1]["parts"]] == ["reasoning"] * 2 + ["text"]
    assert through_json(export_anthropic(thread)) == body
    thread.messages[1]["parts"][2]["text"] = "edited"
    assert export_anthropic(thread)["messages"][1]["content"][2] == text("edited")


def test_anthropic_still_exports_thinking_blocks_an_earlier_import_kept_in_metadata() -> None:
    blocks = [
        {"type": "thinking", "thinking": "hm", "signature": "sig1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
    ]
    reasoning = {"type": "reasoning", "text": "hm", "signature": "sig1"}
    metadata = {"extra": {"claude": {"thinking_blocks": blocks}}}
    thread = linear_thread(
        [
            make_message("u", None, "user", [text("go")]),
            make_message("a", None, "assistant", [reasoning, text("done")], metadata=metadata),
        ]
    )
    assert export_anthropic(thread)["messages"][1]["content"] == [*blocks, text("done")]
