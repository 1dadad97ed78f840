"""The OpenInference convention: Phoenix's flat `llm.*_messages` LLM spans into LLM calls."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcripts.formats.otlp import conventions
from transcripts.formats.otlp.conventions import openinference
from transcripts.formats.otlp.decode import JSON, parse_request, spans_of
from transcripts.formats.otlp.model import LlmCall, SpanData, SpanRejected

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_spans() -> list[SpanData]:
    """The spans of the two-turn OTLP JSON fixture, decoded as the receiver decodes them."""
    body = (FIXTURES / "openinference_two_turns.json").read_bytes()
    return list(spans_of(parse_request(body, JSON)))


def calls() -> list[LlmCall]:
    """The LLM calls of the fixture, in span order."""
    read = [openinference.to_call(span) for span in fixture_spans()]
    return [call for call in read if call is not None]


def llm_span(**attributes: Any) -> SpanData:
    """A bare LLM span with the given attributes."""
    return SpanData(
        trace_id="7a3c4e1f9b2d4c6e8f0a1b2c3d4e5f60",
        span_id="1111111111111111",
        parent_span_id=None,
        name="ChatCompletion",
        start_ns=1,
        end_ns=2,
        attributes={"openinference.span.kind": "LLM", **attributes},
    )


def test_it_reads_llm_spans_and_ignores_agents_tools_retrievers_and_embeddings() -> None:
    read = [(span.name, openinference.to_call(span) is not None) for span in fixture_spans()]
    assert read == [
        ("weather_agent", False),
        ("ChatCompletion", True),
        ("get_weather", False),
        ("retrieve_docs", False),
        ("ChatCompletion", True),
        ("ChatCompletion", True),
        ("CreateEmbeddings", False),
    ]


def test_the_registry_hands_every_llm_span_to_this_convention() -> None:
    read = [conventions.to_call(span) for span in fixture_spans()]
    assert [call.convention for call in read if call is not None] == ["openinference"] * 3


def test_the_first_call_asks_for_the_tool() -> None:
    first = calls()[0]
    assert [message["role"] for message in first.input_messages] == ["system", "user"]
    assert first.input_messages[1]["parts"] == [
        {"type": "text", "text": "What's the weather in Paris?"}
    ]
    assert first.output_messages == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-call",
                    "toolCallId": "call_Zr4",
                    "toolName": "get_weather",
                    "input": {"city": "Paris"},
                }
            ],
            "metadata": {},
        }
    ]
    assert first.usage == {"inputTokens": 90, "outputTokens": 18, "totalTokens": 108}
    assert first.finish_reason is None


def test_it_reads_model_provider_session_and_agent() -> None:
    for call in calls():
        assert call.convention == "openinference"
        assert call.model == "gpt-4o-2024-08-06"
        assert call.provider == "openai"
        assert call.conversation_id == "sess-oi-1"
        assert call.agent_name == "weather_agent"
        assert call.error is None


def test_the_second_call_sees_the_tool_result_named_after_its_call() -> None:
    first, second, _third = calls()
    assert second.input_messages[2] == first.output_messages[0]
    assert second.input_messages[3]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "call_Zr4",
            "toolName": "get_weather",
            "output": {"tempC": 18, "sky": "sunny"},
            "isError": False,
        }
    ]
    assert second.output_messages[0]["parts"] == [
        {"type": "text", "text": "18°C and sunny in Paris."}
    ]


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


def test_a_data_url_image_keeps_its_mime_type() -> None:
    prefix = "llm.input_messages.0.message"
    span = llm_span(
        **{
            f"{prefix}.role": "user",
            f"{prefix}.contents.0.message_content.type": "image",
            f"{prefix}.contents.0.message_content.image.image.url": "data:image/jpeg;base64,/9j/",
        }
    )
    call = openinference.to_call(span)
    assert call is not None
    assert call.input_messages[0]["parts"] == [
        {"type": "file", "mimeType": "image/jpeg", "url": "data:image/jpeg;base64,/9j/"}
    ]


def test_a_lowercase_kind_and_a_tool_name_without_a_call_are_read() -> None:
    prefix = "llm.input_messages.0.message"
    span = llm_span(
        **{
            "openinference.span.kind": "llm",
            f"{prefix}.role": "tool",
            f"{prefix}.tool_call_id": "c1",
            f"{prefix}.name": "lookup",
            f"{prefix}.content": "plain words",
        }
    )
    call = openinference.to_call(span)
    assert call is not None
    assert call.input_messages[0]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "toolName": "lookup",
            "output": "plain words",
            "isError": False,
        }
    ]


def test_an_llm_span_without_messages_is_not_a_call() -> None:
    assert openinference.to_call(llm_span(**{"llm.model_name": "gpt-4o"})) is None


def test_a_failed_call_keeps_its_error() -> None:
    span = dataclasses.replace(calls()[0].span, status_code=2, status_message="APITimeoutError")
    call = openinference.to_call(span)
    assert call is not None
    assert call.error == "APITimeoutError"


@pytest.mark.parametrize(
    ("attribute", "value", "reason"),
    [
        ("llm.input_messages.1.message.role", "oracle", "llm.input_messages.1.message.role"),
        ("llm.input_messages.1.message.role", None, "llm.input_messages.1.message.role"),
        ("llm.input_messages.1.message.content", 4, "llm.input_messages.1.message.content"),
        (
            "llm.input_messages.3.message.tool_call_id",
            None,
            "llm.input_messages.3.message.tool_call_id",
        ),
        (
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.name",
            None,
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.name",
        ),
        (
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments",
            7,
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments",
        ),
        (
            "llm.input_messages.1.message.contents.0.message_content.type",
            "image",
            "llm.input_messages.1.message.contents.0.message_content.image.image.url",
        ),
        (
            "llm.invocation_parameters",
            "{temperature: 0",
            "llm.invocation_parameters: not valid JSON",
        ),
        ("llm.invocation_parameters", "[]", "llm.invocation_parameters: expected a JSON object"),
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
        openinference.to_call(dataclasses.replace(span, attributes=attributes))
    assert raised.value.reason.startswith(reason)


fields = st.sampled_from(
    [
        "role",
        "content",
        "name",
        "tool_call_id",
        "contents.0.message_content.type",
        "contents.0.message_content.text",
        "contents.1.message_content.image.image.url",
        "tool_calls.0.tool_call.id",
        "tool_calls.0.tool_call.function.name",
        "tool_calls.0.tool_call.function.arguments",
    ]
)
values = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(["user", "tool", "text", "image", "{}"])
    | st.text(max_size=6)
)


@settings(max_examples=200, deadline=None)
@given(
    attributes=st.dictionaries(
        st.builds(
            "llm.{}_messages.{}.message.{}".format,
            st.sampled_from(["input", "output"]),
            st.integers(0, 2),
            fields,
        ),
        values,
        max_size=6,
    )
)
def test_any_input_gives_a_call_a_rejection_or_nothing(attributes: dict[str, Any]) -> None:
    try:
        openinference.to_call(llm_span(**attributes))
    except SpanRejected as rejected:
        assert rejected.reason.startswith("llm.")
