"""The AI SDK UI message stream adapter: chunks → events, pure (no database)."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import FIXTURES
from transcripts.errors import InvalidStream
from transcripts.events import check_events
from transcripts.formats.ai_sdk.stream import chunks_to_events, parse_stream, to_events
from transcripts.projector import project

RUN_ID = "01JB8ZT6QK5X4V3N2M1P0R9S8T"
REAL_STREAMS = [
    "multi_step_tools",
    "tool_error_with_data",
    "model_error",
    "tool_approval_request",
    "tool_approval_denied",
    "aborted",
]


def _kinds(chunks: list[dict]) -> list[tuple[str, dict]]:
    return [(kind, data) for _, kind, data in chunks_to_events(chunks)]


def _fixture(name: str) -> list[dict]:
    return parse_stream((FIXTURES / f"{name}.sse").read_bytes(), "text/event-stream")


@pytest.mark.parametrize("name", REAL_STREAMS)
def test_the_sse_and_json_forms_of_a_real_sdk_stream_give_the_same_chunks(name):
    as_json = (FIXTURES / f"{name}.json").read_bytes()

    assert _fixture(name) == parse_stream(as_json, "application/json")
    assert _fixture(name) == parse_stream(as_json, "")  # sniffed


@pytest.mark.parametrize("name", REAL_STREAMS)
def test_every_event_of_a_real_sdk_stream_is_valid(name):
    check_events(to_events(_fixture(name), after_seq=0))


def test_a_multi_step_tool_calling_run_with_reasoning_projects_to_canonical_messages():
    events = to_events(_fixture("multi_step_tools"), after_seq=0)
    projection = project(events, run_id=RUN_ID)
    first, tool, second = projection.messages

    assert [m["role"] for m in projection.messages] == ["assistant", "tool", "assistant"]
    assert first["parts"] == [
        {
            "type": "reasoning",
            "text": "The user wants the weather. I should call the tool.",
            "signature": "sig-1",
        },
        {"type": "text", "text": "Let me check the weather."},
        {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "weather",
            "input": {"city": "Paris"},
        },
    ]
    assert tool["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "call-1",
            "toolName": "weather",
            "output": {"city": "Paris", "temperature": 21, "conditions": "sunny"},
            "isError": False,
        }
    ]
    assert second["parts"] == [
        {"type": "reasoning", "text": "It is sunny in Paris."},
        {"type": "text", "text": "It is 21°C and sunny in Paris."},
    ]
    assert first["metadata"]["sourceMessageId"] == "msg-aisdk-1"
    assert second["metadata"]["finishReason"] == "stop"
    assert second["metadata"]["usage"]["totalTokens"] == 112
    assert projection.metadata["stepCount"] == 2
    assert projection.metadata["usage"]["inputTokens"] == 62
    source = second["metadata"]["annotations"][0]
    assert source["kind"] == "system.ai-sdk.source-url"
    assert source["data"]["url"] == "https://example.com/paris"


def test_text_deltas_are_gathered_into_one_event_per_part():
    events = _kinds(
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "a"},
            {"type": "text-delta", "id": "t", "delta": "b"},
            {"type": "text-end", "id": "t"},
        ]
    )

    assert events == [("text-delta", {"delta": "ab", "id": "t"})]


def test_interleaved_parts_are_kept_apart_by_id_in_start_order():
    events = _kinds(
        [
            {"type": "reasoning-start", "id": "r"},
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "answer"},
            {"type": "reasoning-delta", "id": "r", "delta": "thinking"},
            {"type": "text-end", "id": "t"},
            {"type": "reasoning-delta", "id": "r", "delta": " more"},
            {"type": "reasoning-end", "id": "r"},
        ]
    )

    assert events == [
        ("reasoning", {"text": "thinking more", "id": "r"}),
        ("text-delta", {"delta": "answer", "id": "t"}),
    ]


def test_deltas_without_a_start_or_end_still_become_a_part():
    events = _kinds([{"type": "text-delta", "id": "t", "delta": "cut off"}])

    assert events == [("text-delta", {"delta": "cut off", "id": "t"})]


def test_an_empty_part_is_dropped_only_when_it_carries_nothing():
    empty = [{"type": "text-start", "id": "t"}, {"type": "text-end", "id": "t"}]
    redacted = [
        {"type": "reasoning-start", "id": "r"},
        {
            "type": "reasoning-end",
            "id": "r",
            "providerMetadata": {"anthropic": {"redactedData": "x"}},
        },
    ]

    assert _kinds(empty) == []
    assert _kinds(redacted) == [
        (
            "reasoning",
            {"text": "", "id": "r", "providerMetadata": {"anthropic": {"redactedData": "x"}}},
        )
    ]


def test_tool_input_is_correlated_by_tool_call_id():
    events = _kinds(
        [
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search", "dynamic": True},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"q":'},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '"x"}'},
            {
                "type": "tool-input-available",
                "toolCallId": "c1",
                "toolName": "search",
                "input": {"q": "x"},
            },
            {"type": "tool-output-available", "toolCallId": "c1", "output": [1, 2]},
        ]
    )

    assert events == [
        (
            "tool-call",
            {"toolCallId": "c1", "toolName": "search", "dynamic": True, "input": {"q": "x"}},
        ),
        (
            "tool-result",
            {"toolCallId": "c1", "toolName": "search", "output": [1, 2], "isError": False},
        ),
    ]


def test_tool_errors_and_denials_become_error_results():
    events = _kinds(
        [
            {
                "type": "tool-input-error",
                "toolCallId": "c1",
                "toolName": "t",
                "input": "{bad",
                "errorText": "bad json",
            },
            {"type": "tool-output-error", "toolCallId": "c1", "errorText": "failed"},
            {"type": "tool-input-available", "toolCallId": "c2", "toolName": "rm", "input": {}},
            {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c2"},
            {"type": "tool-output-denied", "toolCallId": "c2"},
        ]
    )

    assert events[0] == (
        "tool-call",
        {"toolCallId": "c1", "toolName": "t", "input": "{bad", "errorText": "bad json"},
    )
    assert events[1][1]["isError"] is True and events[1][1]["output"] == "failed"
    assert events[3] == (
        "system.ai-sdk.tool-approval-request",
        {"approvalId": "a1", "toolCallId": "c2"},
    )
    assert events[4][1] == {
        "toolCallId": "c2",
        "toolName": "rm",
        "output": "The tool call was denied.",
        "isError": True,
        "denied": True,
    }


def test_a_tool_input_cut_off_by_the_end_of_the_stream_is_kept():
    events = _kinds(
        [
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "t"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a"'},
        ]
    )

    assert events == [
        (
            "system.ai-sdk.tool-input-start",
            {"toolCallId": "c1", "toolName": "t", "inputText": '{"a"'},
        )
    ]


def test_preliminary_tool_outputs_are_kept_apart_from_the_result():
    events = _kinds(
        [
            {"type": "tool-output-available", "toolCallId": "c", "output": 1, "preliminary": True},
            {"type": "tool-output-available", "toolCallId": "c", "output": 2},
        ]
    )

    assert [kind for kind, _ in events] == ["system.ai-sdk.tool-output-available", "tool-result"]


def test_start_steps_and_finish_map_to_message_and_step_events():
    events = _kinds(
        [
            {"type": "start", "messageId": "m1", "messageMetadata": {"user": "u"}},
            {"type": "start-step"},
            {"type": "finish-step"},
            {
                "type": "finish",
                "finishReason": "length",
                "messageMetadata": {"usage": {"outputTokens": 3}},
            },
        ]
    )

    assert events == [
        ("message-start", {"role": "assistant", "messageId": "m1", "metadata": {"user": "u"}}),
        ("step-started", {}),
        (
            "step-finished",
            {
                "finishReason": "length",
                "messageMetadata": {"usage": {"outputTokens": 3}},
                "usage": {"outputTokens": 3},
            },
        ),
        ("message-end", {}),
    ]


def test_a_finish_without_a_step_opens_its_own_step_event():
    assert _kinds([{"type": "finish"}]) == [("step-finished", {}), ("message-end", {})]


def test_sources_files_data_and_metadata_are_all_kept():
    events = _kinds(
        [
            {"type": "source-url", "sourceId": "s1", "url": "https://a.example"},
            {
                "type": "source-document",
                "sourceId": "s2",
                "mediaType": "application/pdf",
                "title": "Doc",
            },
            {"type": "file", "url": "data:image/png;base64,AA==", "mediaType": "image/png"},
            {"type": "data-weather", "id": "w", "data": {"t": 1}, "transient": True},
            {"type": "message-metadata", "messageMetadata": {"k": 1}},
            {"type": "custom", "kind": "acme.thing"},
            {"type": "a-future-chunk", "x": 1},
        ]
    )

    assert events == [
        ("system.ai-sdk.source-url", {"sourceId": "s1", "url": "https://a.example"}),
        (
            "system.ai-sdk.source-document",
            {"sourceId": "s2", "mediaType": "application/pdf", "title": "Doc"},
        ),
        ("file", {"mimeType": "image/png", "url": "data:image/png;base64,AA=="}),
        ("data-weather", {"id": "w", "data": {"t": 1}, "transient": True}),
        ("system.ai-sdk.message-metadata", {"messageMetadata": {"k": 1}}),
        ("system.ai-sdk.custom", {"kind": "acme.thing"}),
        ("system.ai-sdk.a-future-chunk", {"x": 1}),
    ]


def test_errors_and_aborts_become_error_events():
    events = _kinds(
        [{"type": "error", "errorText": "rate limited"}, {"type": "abort", "reason": "user"}]
    )

    assert events == [
        ("error", {"message": "rate limited"}),
        ("error", {"reason": "user", "message": "the stream was aborted: user", "code": "abort"}),
    ]


def test_a_steering_message_becomes_a_user_message():
    events = _kinds(
        [{"type": "steering-message", "id": "u1", "parts": [{"type": "text", "text": "also this"}]}]
    )

    assert events == [
        ("message", {"role": "user", "parts": [{"type": "text", "text": "also this"}], "id": "u1"})
    ]


def test_events_are_numbered_after_the_last_seq():
    events = to_events([{"type": "start-step"}, {"type": "finish-step"}], after_seq=41)

    assert [e["seq"] for e in events] == [42, 43]


def test_the_event_stream_framing_tolerates_comments_ids_and_crlf():
    body = (
        b": hello\r\nid: 1\r\nevent: x\r\n"
        b'data: {"type":\r\ndata: "start-step"}\r\n\r\n'
        b"data: [DONE]\r\n\r\n"
    )

    assert parse_stream(body, "text/event-stream") == [{"type": "start-step"}]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b"data: {nope\n\n", "frames[0]"),
        (b'{"type": "start"}', "body"),
        (b"[1]", "chunks[0]"),
        (b'[{"kind": "x"}]', "chunks[0].type"),
        (b'[{"type": "text-delta", "id": "t", "delta": 5}]', "chunks[0].delta"),
        (
            b'[{"type": "start"},'
            b' {"type": "tool-input-available", "toolCallId": "", "toolName": "t"}]',
            "chunks[1].toolCallId",
        ),
        (b'[{"type": "file", "url": "", "mediaType": "image/png"}]', "chunks[0].url"),
        (b'[{"type": "text-delta", "id": "t", "delta": "a\\u0000"}]', "chunks[0].delta"),
        (b"\xff", "body"),
    ],
)
def test_a_malformed_stream_is_refused_naming_the_chunk_and_field(body, path):
    with pytest.raises(InvalidStream) as refusal:
        to_events(parse_stream(body, ""), after_seq=0)

    assert refusal.value.problems[0][0] == path


def test_a_json_body_that_is_not_an_array_is_refused():
    with pytest.raises(InvalidStream):
        parse_stream(json.dumps({"chunks": []}).encode(), "application/json")


def test_a_real_approval_request_keeps_the_call_the_source_and_the_request():
    kinds = _kinds(_fixture("tool_approval_request"))

    assert [k for k, _ in kinds] == [
        "message-start",
        "step-started",
        "system.ai-sdk.message-metadata",
        "system.ai-sdk.source-document",
        "text-delta",
        "tool-call",
        "system.ai-sdk.tool-approval-request",
        "step-finished",
        "message-end",
    ]
    assert kinds[5][1] == {
        "toolCallId": "call-del",
        "toolName": "deleteFile",
        "input": {"path": "/tmp/x"},
    }
    assert kinds[6][1] == {"approvalId": "id-2", "toolCallId": "call-del"}
    assert kinds[-2][1] == {"finishReason": "tool-calls"}


def test_a_denial_answering_an_earlier_stream_comes_before_the_new_message():
    chunks = _fixture("tool_approval_denied")
    events = to_events(chunks, after_seq=0, tool_names={"call-del": "deleteFile"})

    assert [e["kind"] for e in events][:3] == ["tool-result", "message-start", "step-started"]
    assert events[0]["data"] == {
        "toolCallId": "call-del",
        "toolName": "deleteFile",
        "output": "The tool call was denied.",
        "isError": True,
        "denied": True,
    }
    projection = project(events, run_id=RUN_ID)
    assert [m["role"] for m in projection.messages] == ["tool", "assistant"]
    assert projection.messages[1]["parts"] == [
        {"type": "text", "text": "Understood, I left it alone."}
    ]


def test_only_outputs_of_calls_the_stream_lacks_are_answered_elsewhere():
    from transcripts.formats.ai_sdk.stream import answered_elsewhere

    assert answered_elsewhere(_fixture("tool_approval_denied")) == ["call-del"]
    assert answered_elsewhere(_fixture("multi_step_tools")) == []


def test_a_real_abort_keeps_the_text_so_far_and_an_abort_error():
    events = to_events(_fixture("aborted"), after_seq=0)
    projection = project(events, run_id=RUN_ID)

    assert events[-1]["kind"] == "error"
    assert events[-1]["data"] == {
        "reason": "the user pressed stop",
        "message": "the stream was aborted: the user pressed stop",
        "code": "abort",
    }
    assert projection.messages[0]["parts"] == [{"type": "text", "text": "Once upon a "}]


def test_an_event_stream_body_sent_as_json_is_read_by_its_content():
    body = (FIXTURES / "multi_step_tools.sse").read_bytes()

    assert parse_stream(body, "application/json") == _fixture("multi_step_tools")
    assert parse_stream(body, "text/plain") == _fixture("multi_step_tools")
