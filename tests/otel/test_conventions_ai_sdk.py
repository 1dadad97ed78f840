"""The AI SDK convention: `experimental_telemetry` spans into LLM calls."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcripts.formats.otlp import conventions
from transcripts.formats.otlp.conventions import ai_sdk
from transcripts.formats.otlp.decode import JSON, parse_request, spans_of
from transcripts.formats.otlp.model import LlmCall, SpanData, SpanRejected

FIXTURES = Path(__file__).parent / "fixtures"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42"
    "mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def fixture_spans(name: str) -> list[SpanData]:
    """The spans of an OTLP JSON fixture, decoded as the receiver decodes them."""
    return list(spans_of(parse_request((FIXTURES / name).read_bytes(), JSON)))


def calls() -> list[LlmCall]:
    """The LLM calls of the two-turn fixture, in span order."""
    read = [ai_sdk.to_call(span) for span in fixture_spans("ai_sdk_two_turns.json")]
    return [call for call in read if call is not None]


def with_attributes(span: SpanData, **changes: Any) -> SpanData:
    """A copy of span with attributes replaced (a None value removes the attribute)."""
    attributes = {**span.attributes, **changes}
    return dataclasses.replace(
        span, attributes={key: value for key, value in attributes.items() if value is not None}
    )


def do_generate(**attributes: Any) -> SpanData:
    """A bare `ai.generateText.doGenerate` span with the given attributes."""
    return SpanData(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_span_id=None,
        name="ai.generateText.doGenerate",
        start_ns=1,
        end_ns=2,
        attributes={"ai.operationId": "ai.generateText.doGenerate", **attributes},
    )


def test_it_reads_the_inner_model_calls_only() -> None:
    names = [call.span.name for call in calls()]
    assert names == [
        "ai.streamText.doStream",
        "ai.streamText.doStream",
        "ai.generateText.doGenerate",
    ]


def test_outer_tool_and_embedding_spans_are_not_calls() -> None:
    ignored = [
        span.name for span in fixture_spans("ai_sdk_two_turns.json") if ai_sdk.to_call(span) is None
    ]
    assert ignored == ["ai.streamText", "ai.toolCall", "ai.generateText", "ai.embed.doEmbed"]


def test_the_registry_hands_every_call_span_to_this_convention() -> None:
    read = [conventions.to_call(span) for span in fixture_spans("ai_sdk_two_turns.json")]
    assert [call.convention for call in read if call is not None] == ["ai_sdk"] * 3


def test_the_first_step_asks_for_the_tool_after_reasoning() -> None:
    first = calls()[0]
    assert first.convention == "ai_sdk"
    assert [message["role"] for message in first.input_messages] == ["system", "user"]
    assert first.input_messages[0]["parts"] == [
        {"type": "text", "text": "You are a terse weather assistant."}
    ]
    assert first.output_messages == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "The user wants current weather; call the tool."},
                {
                    "type": "tool-call",
                    "toolCallId": "toolu_01A",
                    "toolName": "weather",
                    "input": {"city": "Paris"},
                },
            ],
            "metadata": {},
        }
    ]
    assert first.finish_reason == "tool-calls"
    assert first.usage == {
        "inputTokens": 141,
        "outputTokens": 42,
        "totalTokens": 183,
        "reasoningTokens": 18,
    }


def test_it_reads_model_provider_conversation_and_agent() -> None:
    for call in calls():
        assert call.model == "claude-sonnet-4-5-20250929"
        assert call.provider == "anthropic.messages"
        assert call.conversation_id == "chat-42"
        assert call.agent_name == "weather-agent"
        assert call.error is None


def test_the_second_step_sees_the_signed_reasoning_and_the_tool_result() -> None:
    second = calls()[1]
    assert [message["role"] for message in second.input_messages] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    assistant, tool = second.input_messages[2:]
    assert assistant["parts"][0] == {
        "type": "reasoning",
        "text": "The user wants current weather; call the tool.",
    }
    assert assistant["metadata"] == {
        "extra": {"ai_sdk": {"reasoningSignatures": ["EqQBCkYIBxgCKkBsig1"]}}
    }
    assert tool["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "toolu_01A",
            "toolName": "weather",
            "output": {"city": "Paris", "tempC": 18, "sky": "sunny"},
            "isError": False,
        }
    ]
    assert second.output_messages[0]["parts"] == [
        {"type": "text", "text": "18°C and sunny in Paris."}
    ]
    assert second.usage["cachedInputTokens"] == 128


def test_turn_two_repeats_the_history_and_adds_an_image() -> None:
    first, second, third = calls()
    assert third.input_messages[:4] == second.input_messages
    assert third.input_messages[4] == second.output_messages[0]
    # What a step answered is what the next step repeats, part for part.
    assert second.input_messages[2]["parts"] == first.output_messages[0]["parts"]
    question = third.input_messages[5]
    assert question["role"] == "user"
    assert question["parts"] == [
        {"type": "text", "text": "And tomorrow? This is the view from my window."},
        {"type": "file", "mimeType": "image/png", "url": f"data:image/png;base64,{PNG}"},
    ]
    assert third.output_messages[0]["parts"] == [
        {"type": "text", "text": "Tomorrow: 21°C, light clouds."}
    ]
    assert third.finish_reason == "stop"


def test_version_4_spans_are_read_too() -> None:
    messages = [
        {"role": "user", "content": [{"type": "image", "image": "https://x.test/a.jpg"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "hmm", "signature": "sig-4"},
                {"type": "redacted-reasoning", "data": "opaque"},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "look", "args": {"q": 1}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "result": "boom", "isError": True}
            ],
        },
    ]
    call = ai_sdk.to_call(
        do_generate(
            **{
                "ai.prompt.messages": json.dumps(messages),
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": "c2", "toolName": "look", "args": '{"q": 2}'}]
                ),
                "ai.usage.promptTokens": 7,
                "ai.usage.completionTokens": 3,
                "ai.telemetry.metadata.threadId": "t-1",
            }
        )
    )
    assert call is not None
    assert call.input_messages[0]["parts"] == [
        {"type": "file", "mimeType": "image/*", "url": "https://x.test/a.jpg"}
    ]
    assert call.input_messages[1]["parts"] == [
        {"type": "reasoning", "text": "hmm"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "look", "input": {"q": 1}},
    ]
    assert call.input_messages[1]["metadata"] == {
        "extra": {"ai_sdk": {"reasoningSignatures": ["sig-4"]}}
    }
    assert call.input_messages[2]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "toolName": "look",
            "output": "boom",
            "isError": True,
        }
    ]
    assert call.output_messages[0]["parts"] == [
        {"type": "tool-call", "toolCallId": "c2", "toolName": "look", "input": {"q": 2}}
    ]
    assert call.usage == {"inputTokens": 7, "outputTokens": 3}
    assert call.conversation_id == "t-1"


@pytest.mark.parametrize(
    ("output", "expected", "is_error"),
    [
        ({"type": "text", "value": "rainy"}, "rainy", False),
        ({"type": "error-text", "value": "no such city"}, "no such city", True),
        ({"type": "error-json", "value": {"code": 404}}, {"code": 404}, True),
        ({"type": "execution-denied", "reason": "not allowed"}, "not allowed", True),
        ({"type": "execution-denied"}, "denied", True),
        (
            {"type": "content", "value": [{"type": "text", "text": "a"}]},
            [{"type": "text", "text": "a"}],
            False,
        ),
    ],
)
def test_typed_tool_outputs_keep_their_value_and_error_state(
    output: dict[str, Any], expected: Any, is_error: bool
) -> None:
    result = {"type": "tool-result", "toolCallId": "c1", "toolName": "weather", "output": output}
    span = do_generate(
        **{"ai.prompt.messages": json.dumps([{"role": "tool", "content": [result]}])}
    )
    call = ai_sdk.to_call(span)
    assert call is not None
    part = call.input_messages[0]["parts"][0]
    assert (part["output"], part["isError"]) == (expected, is_error)


def test_a_failed_call_keeps_its_error() -> None:
    span = dataclasses.replace(calls()[2].span, status_code=2, status_message="Overloaded (529)")
    call = ai_sdk.to_call(span)
    assert call is not None
    assert call.error == "Overloaded (529)"


def test_a_call_without_recorded_inputs_has_an_empty_history() -> None:
    call = ai_sdk.to_call(do_generate(**{"ai.response.text": "hi"}))
    assert call is not None
    assert call.input_messages == []
    assert call.output_messages[0]["parts"] == [{"type": "text", "text": "hi"}]


def test_unknown_parts_and_fields_are_tolerated() -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "providerOptions": {"x": 1}}],
            "future": True,
        },
        {"role": "assistant", "content": [{"type": "tool-approval-request", "approvalId": "a"}]},
    ]
    call = ai_sdk.to_call(do_generate(**{"ai.prompt.messages": json.dumps(messages)}))
    assert call is not None
    assert call.input_messages == [
        {"role": "user", "parts": [{"type": "text", "text": "hi"}], "metadata": {}},
        {"role": "assistant", "parts": [], "metadata": {}},
    ]


@pytest.mark.parametrize(
    ("attribute", "value", "reason"),
    [
        ("ai.prompt.messages", "[{not json", "ai.prompt.messages: not valid JSON"),
        ("ai.prompt.messages", 42, "ai.prompt.messages: expected a JSON string"),
        ("ai.prompt.messages", '{"role": "user"}', "ai.prompt.messages: expected a JSON array"),
        ("ai.prompt.messages", '["hi"]', "ai.prompt.messages[0]: expected an object"),
        (
            "ai.prompt.messages",
            '[{"role": "robot", "content": "hi"}]',
            "ai.prompt.messages[0].role",
        ),
        ("ai.prompt.messages", '[{"role": "user", "content": 5}]', "ai.prompt.messages[0].content"),
        (
            "ai.prompt.messages",
            '[{"role": "assistant", "content": [{"type": "tool-call", "toolName": "w"}]}]',
            "ai.prompt.messages[0].content[0].toolCallId",
        ),
        (
            "ai.prompt.messages",
            '[{"role": "user", "content": [{"type": "file", "mediaType": "image/png"}]}]',
            "ai.prompt.messages[0].content[0].data",
        ),
        ("ai.response.toolCalls", "[1]", "ai.response.toolCalls[0]: expected an object"),
        ("ai.response.toolCalls", "nope", "ai.response.toolCalls: not valid JSON"),
    ],
)
def test_a_malformed_span_is_rejected_naming_the_attribute(
    attribute: str, value: Any, reason: str
) -> None:
    span = with_attributes(calls()[1].span, **{attribute: value})
    with pytest.raises(SpanRejected) as raised:
        ai_sdk.to_call(span)
    assert raised.value.reason.startswith(reason)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["role", "content", "type", "text", "toolCallId", "toolName", "output"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(messages=json_values, tool_calls=json_values, raw=st.none() | st.integers() | st.text())
def test_any_input_gives_a_call_or_a_rejection(messages: Any, tool_calls: Any, raw: Any) -> None:
    span = do_generate(
        **{
            "ai.prompt.messages": json.dumps(messages),
            "ai.response.toolCalls": json.dumps(tool_calls),
            "ai.response.text": raw,
            "ai.usage.inputTokens": raw,
        }
    )
    try:
        ai_sdk.to_call(span)
    except SpanRejected as rejected:
        assert rejected.reason.startswith(("ai.prompt.messages", "ai.response.toolCalls"))
