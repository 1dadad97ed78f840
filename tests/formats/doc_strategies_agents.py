"""Hypothesis strategies for the agent frameworks' documents: Pydantic AI and AI SDK messages.

The Pydantic AI history is built with pydantic_ai's own classes and dumped by its type
adapter, so every field it writes is there, as it writes it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from pydantic_ai import messages as pai
from pydantic_ai.usage import RequestUsage

from tests.formats.doc_strategies import B64, IDS, TEXT, counter
from tests.formats.helpers import through_json
from tests.formats.strategies import JSON_OBJECTS, JSON_VALUES, NAMES

# --- Pydantic AI ---------------------------------------------------------------------------


@st.composite
def moments(draw: st.DrawFn) -> datetime:
    """A UTC time with microseconds, as Pydantic AI stamps its messages."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return start + timedelta(microseconds=draw(st.integers(min_value=0, max_value=10**13)))


@st.composite
def pydantic_ai_user_content(draw: st.DrawFn) -> Any:
    """A user prompt: a string, or a list of strings, image URLs and binary content."""
    if draw(st.booleans()):
        return draw(TEXT)
    items: list[Any] = [draw(TEXT)]
    if draw(st.booleans()):
        items.append(pai.ImageUrl(url="https://example.com/a.png"))
    if draw(st.booleans()):
        items.append(pai.BinaryContent(data=draw(st.binary(min_size=1)), media_type="image/png"))
    return draw(st.permutations(items))


@st.composite
def pydantic_ai_documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A message history built with pydantic_ai's own classes and dumped as JSON."""
    next_id = counter()
    history: list[Any] = []
    first: list[Any] = []
    if draw(st.booleans()):
        first.append(pai.SystemPromptPart(content=draw(TEXT), timestamp=draw(moments())))
    request_parts: list[Any] = first
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        request_parts.append(
            pai.UserPromptPart(content=draw(pydantic_ai_user_content()), timestamp=draw(moments()))
        )
        history.append(pai.ModelRequest(parts=request_parts, timestamp=draw(moments())))
        for _ in range(draw(st.integers(min_value=1, max_value=2))):
            parts: list[Any] = []
            if draw(st.booleans()):
                signature = draw(st.none() | B64)
                parts.append(pai.ThinkingPart(content=draw(TEXT), signature=signature))
            if draw(st.booleans()):
                parts.append(pai.TextPart(content=draw(TEXT)))
            calls = [
                pai.ToolCallPart(
                    tool_name=draw(NAMES),
                    args=draw(JSON_OBJECTS | JSON_OBJECTS.map(json.dumps)),
                    tool_call_id=next_id(),
                )
                for _ in range(draw(st.integers(min_value=0, max_value=2)))
            ]
            usage = RequestUsage(
                input_tokens=draw(st.integers(min_value=0, max_value=9999)),
                output_tokens=draw(st.integers(min_value=0, max_value=9999)),
            )
            history.append(
                pai.ModelResponse(
                    parts=parts + calls,
                    usage=usage,
                    model_name=draw(st.none() | NAMES),
                    timestamp=draw(moments()),
                    finish_reason=draw(st.sampled_from([None, "stop", "tool_call", "length"])),
                )
            )
            if not calls:
                break
            returns: list[Any] = []
            for call in calls:
                returns.append(
                    pai.ToolReturnPart(
                        tool_name=call.tool_name,
                        content=draw(JSON_VALUES),
                        tool_call_id=call.tool_call_id,
                        timestamp=draw(moments()),
                        outcome=draw(st.sampled_from(["success", "failed", "retried"])),
                    )
                )
            history.append(pai.ModelRequest(parts=returns, timestamp=draw(moments())))
        request_parts = []
    dumped: list[dict[str, Any]] = through_json(
        pai.ModelMessagesTypeAdapter.dump_python(history, mode="json")
    )
    return dumped


# --- AI SDK UIMessage[] --------------------------------------------------------------------


@st.composite
def ai_sdk_tool_part(draw: st.DrawFn, next_id: Any) -> dict[str, Any]:
    """A static or dynamic tool part in one of its states."""
    name = draw(NAMES)
    part: dict[str, Any] = (
        {"type": "dynamic-tool", "toolName": name}
        if draw(st.booleans())
        else {"type": f"tool-{name}"}
    )
    part["toolCallId"] = next_id()
    state = draw(st.sampled_from(["input-available", "output-available", "output-error"]))
    part["state"] = state
    part["input"] = draw(JSON_OBJECTS)
    if state == "output-available":
        part["output"] = draw(JSON_VALUES)
    elif state == "output-error":
        part["errorText"] = draw(st.text(max_size=20))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        part["callProviderMetadata"] = {"openai": {"itemId": draw(IDS)}}
    return part


@st.composite
def ai_sdk_documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    """UIMessages as useChat keeps them: ids, metadata, steps, reasoning, files, tools."""
    next_id = counter()
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append(
            {"id": draw(IDS), "role": "system", "parts": [{"type": "text", "text": draw(TEXT)}]}
        )
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        user: list[dict[str, Any]] = [{"type": "text", "text": draw(TEXT)}]
        if draw(st.booleans()):
            file = {"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"}
            if draw(st.booleans()):
                file["filename"] = "a.png"
            user.append(file)
        message: dict[str, Any] = {"id": draw(IDS), "role": "user", "parts": user}
        if draw(st.booleans()):
            message["metadata"] = draw(JSON_OBJECTS)
        messages.append(message)
        parts: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(min_value=1, max_value=2))):
            parts.append({"type": "step-start"})
            if draw(st.booleans()):
                reasoning: dict[str, Any] = {"type": "reasoning", "text": draw(TEXT)}
                if draw(st.booleans()):
                    reasoning["providerMetadata"] = {"anthropic": {"signature": draw(B64)}}
                if draw(st.booleans()):
                    reasoning["state"] = "done"
                parts.append(reasoning)
            parts += draw(st.lists(ai_sdk_tool_part(next_id), max_size=2))
            parts.append({"type": "text", "text": draw(TEXT), "state": "done"})
        assistant: dict[str, Any] = {"id": draw(IDS), "role": "assistant", "parts": parts}
        if draw(st.booleans()):
            assistant["metadata"] = {"model": draw(NAMES)}
        messages.append(assistant)
    ids = [message["id"] for message in messages]
    if len(set(ids)) != len(ids):
        for index, message in enumerate(messages):
            message["id"] = f"{message['id']}-{index}"
    return messages
