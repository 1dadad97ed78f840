"""The OpenLLMetry convention: Traceloop's flat `gen_ai.prompt.N.*` spans into LLM calls."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcripts.formats.otlp import conventions
from transcripts.formats.otlp.conventions import openllmetry
from transcripts.formats.otlp.decode import JSON, parse_request, spans_of
from transcripts.formats.otlp.model import LlmCall, SpanData, SpanRejected

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_spans() -> list[SpanData]:
    """The spans of the two-turn OTLP JSON fixture, decoded as the receiver decodes them."""
    body = (FIXTURES / "openllmetry_two_turns.json").read_bytes()
    return list(spans_of(parse_request(body, JSON)))


def calls() -> list[LlmCall]:
    """The LLM calls of the fixture, in span order."""
    read = [openllmetry.to_call(span) for span in fixture_spans()]
    return [call for call in read if call is not None]


def chat_span(**attributes: Any) -> SpanData:
    """A bare `anthropic.chat` span with the given attributes."""
    return SpanData(
        trace_id="5b8efff798038103d269b633813fc60c",
        span_id="051581bf3cb55c13",
        parent_span_id=None,
        name="anthropic.chat",
        start_ns=1,
        end_ns=2,
        attributes={"llm.request.type": "chat", "gen_ai.system": "Anthropic", **attributes},
    )


def test_it_reads_the_chat_spans_and_ignores_the_rest() -> None:
    spans = fixture_spans()
    read = {span.name: openllmetry.to_call(span) for span in spans}
    assert [call.span.name for call in calls()] == ["openai.chat"] * 3
    assert read["weather_chat.workflow"] is None
    assert read["get_weather.tool"] is None
    assert read["openai.embeddings"] is None


def test_the_registry_hands_every_chat_span_to_this_convention() -> None:
    read = [conventions.to_call(span) for span in fixture_spans()]
    assert [call.convention for call in read if call is not None] == ["openllmetry"] * 3


def test_the_first_call_asks_for_the_tool() -> None:
    first = calls()[0]
    assert first.input_messages == [
        {
            "role": "system",
            "parts": [{"type": "text", "text": "You answer questions about the weather."}],
            "metadata": {},
        },
        {
            "role": "user",
            "parts": [{"type": "text", "text": "What's the weather in Paris?"}],
            "metadata": {},
        },
    ]
    assert first.output_messages == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-call",
                    "toolCallId": "call_Qx1",
                    "toolName": "get_weather",
                    "input": {"city": "Paris"},
                }
            ],
            "metadata": {},
        }
    ]
    assert first.finish_reason == "tool-calls"
    assert first.usage == {
        "inputTokens": 88,
        "outputTokens": 17,
        "totalTokens": 105,
        "cachedInputTokens": 0,
    }


def test_it_reads_model_provider_session_and_workflow() -> None:
    for call in calls():
        assert call.convention == "openllmetry"
        assert call.model == "gpt-4o-2024-08-06"
        assert call.provider == "openai"
        assert call.conversation_id == "sess-7"
        assert call.agent_name == "weather_chat"


def test_the_second_call_sees_the_tool_result_named_after_its_call() -> None:
    first, second, _third = calls()
    assert second.input_messages[2] == first.output_messages[0]
    assert second.input_messages[3] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool-result",
                "toolCallId": "call_Qx1",
                "toolName": "get_weather",
                "output": {"tempC": 18, "sky": "sunny"},
                "isError": False,
            }
        ],
        "metadata": {},
    }
    assert second.output_messages[0]["parts"] == [
        {"type": "text", "text": "18°C and sunny in Paris."}
    ]
    assert second.finish_reason == "stop"


def test_turn_two_repeats_the_history_and_adds_an_image() -> None:
    _first, second, third = calls()
    assert third.input_messages[:4] == second.input_messages
    assert third.input_messages[4] == second.output_messages[0]
    assert third.input_messages[5]["parts"] == [
        {"type": "text", "text": "And tomorrow? This is the view from my window."},
        {"type": "file", "mimeType": "image/*", "url": "https://example.com/window.jpg"},
    ]
    assert third.output_messages[0]["parts"] == [
        {"type": "text", "text": "Tomorrow: 21°C, light clouds."}
    ]


def test_anthropic_blocks_give_signed_reasoning_and_a_tool_message() -> None:
    answer = [
        {"type": "thinking", "thinking": "Look it up.", "signature": "sig-a"},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
    ]
    results = [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "-3"}],
        },
        {"type": "text", "text": "Thanks. And Bergen?"},
    ]
    span = chat_span(
        **{
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Oslo?",
            "gen_ai.prompt.1.role": "assistant",
            "gen_ai.prompt.1.content": json.dumps(answer),
            "gen_ai.prompt.2.role": "user",
            "gen_ai.prompt.2.content": json.dumps(results),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Rainy.",
            "gen_ai.completion.0.finish_reason": "end_turn",
            "gen_ai.usage.input_tokens": 30,
            "gen_ai.usage.output_tokens": 2,
            "traceloop.association.properties.conversation_id": "c-9",
            "traceloop.entity.name": "support",
        }
    )
    call = openllmetry.to_call(span)
    assert call is not None
    assert [message["role"] for message in call.input_messages] == [
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert call.input_messages[1]["parts"] == [
        {"type": "reasoning", "text": "Look it up.", "signature": "sig-a"},
        {
            "type": "tool-call",
            "toolCallId": "toolu_1",
            "toolName": "weather",
            "input": {"city": "Oslo"},
        },
    ]
    assert call.input_messages[2]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "toolu_1",
            "toolName": "weather",
            "output": "-3",
            "isError": False,
        }
    ]
    assert call.input_messages[3]["parts"] == [{"type": "text", "text": "Thanks. And Bergen?"}]
    assert call.finish_reason == "stop"
    assert call.usage == {"inputTokens": 30, "outputTokens": 2}
    assert call.conversation_id == "c-9"
    assert call.agent_name == "support"
    assert call.provider == "Anthropic"


def test_text_that_merely_looks_like_json_stays_text() -> None:
    span = chat_span(
        **{"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "[1] see footnote"}
    )
    call = openllmetry.to_call(span)
    assert call is not None
    assert call.input_messages[0]["parts"] == [{"type": "text", "text": "[1] see footnote"}]
    assert call.output_messages == []


def test_a_call_without_an_id_gets_one_that_repeats() -> None:
    fields = {"role": "assistant", "tool_calls.0.name": "w", "tool_calls.0.arguments": "{}"}
    span = chat_span(
        **{f"gen_ai.prompt.0.{key}": value for key, value in fields.items()},
        **{f"gen_ai.completion.0.{key}": value for key, value in fields.items()},
    )
    call = openllmetry.to_call(span)
    assert call is not None
    given_id = call.input_messages[0]["parts"][0]["toolCallId"]
    assert given_id.startswith("call-")
    assert call.output_messages[0]["parts"][0]["toolCallId"] == given_id


@pytest.mark.parametrize("request_type", ["embedding", "rerank", "unknown"])
def test_spans_of_other_request_types_are_not_calls(request_type: str) -> None:
    span = chat_span(
        **{
            "llm.request.type": request_type,
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
        }
    )
    assert openllmetry.to_call(span) is None


def test_a_span_without_content_is_not_a_call() -> None:
    assert openllmetry.to_call(chat_span(**{"gen_ai.request.model": "gpt-4o"})) is None


def test_a_failed_call_keeps_its_error() -> None:
    span = dataclasses.replace(calls()[0].span, status_code=2, status_message="RateLimitError")
    call = openllmetry.to_call(span)
    assert call is not None
    assert call.error == "RateLimitError"


@pytest.mark.parametrize(
    ("attribute", "value", "reason"),
    [
        ("gen_ai.prompt.1.role", "wizard", "gen_ai.prompt.1.role"),
        ("gen_ai.prompt.1.role", 3, "gen_ai.prompt.1.role"),
        ("gen_ai.prompt.1.content", 12, "gen_ai.prompt.1.content: expected a string"),
        ("gen_ai.prompt.3.tool_call_id", None, "gen_ai.prompt.3.tool_call_id"),
        ("gen_ai.prompt.2.tool_calls.0.name", None, "gen_ai.prompt.2.tool_calls.0.name"),
        ("gen_ai.prompt.2.tool_calls.0.arguments", 5, "gen_ai.prompt.2.tool_calls.0.arguments"),
        (
            "gen_ai.prompt.1.content",
            '[{"type": "tool_use", "name": "w"}]',
            "gen_ai.prompt.1.content[0].id",
        ),
        (
            "gen_ai.prompt.1.content",
            '[{"type": "image_url", "image_url": {}}]',
            "gen_ai.prompt.1.content[0].image_url.url",
        ),
    ],
)
def test_a_malformed_span_is_rejected_naming_the_attribute(
    attribute: str, value: Any, reason: str
) -> None:
    span = calls()[1].span
    attributes = {**span.attributes, attribute: value}
    if value is None:
        del attributes[attribute]
    with pytest.raises(SpanRejected) as raised:
        openllmetry.to_call(dataclasses.replace(span, attributes=attributes))
    assert raised.value.reason.startswith(reason)


flat_values = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_text = st.recursive(
    st.none() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["type", "text", "id", "name", "input", "tool_use_id", "source", "thinking"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
).map(json.dumps)
fields = st.sampled_from(
    ["role", "content", "tool_call_id", "finish_reason", "tool_calls.0.id", "tool_calls.0.name"]
)


@settings(max_examples=200, deadline=None)
@given(
    attributes=st.dictionaries(
        st.builds(
            "gen_ai.{}.{}.{}".format,
            st.sampled_from(["prompt", "completion"]),
            st.integers(0, 2),
            fields,
        ),
        flat_values | json_text,
        max_size=6,
    )
)
def test_any_input_gives_a_call_a_rejection_or_nothing(attributes: dict[str, Any]) -> None:
    try:
        openllmetry.to_call(chat_span(**attributes))
    except SpanRejected as rejected:
        assert rejected.reason.startswith("gen_ai.")
