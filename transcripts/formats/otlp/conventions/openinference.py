"""OpenInference (Arize Phoenix) LLM spans with flat `llm.input_messages.N.message.*` content.

Only spans of kind `LLM` are calls; chains, retrievers, embeddings, tools and agents are not.
Lists are flattened with zero-based indexes; tool results are `tool` messages naming the call
in `message.tool_call_id`; tool call arguments are JSON strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from transcripts.formats.document import file_part
from transcripts.formats.otlp.conventions.common import (
    ROLES,
    first_string,
    flat_tool_calls,
    indexed,
    mime_of,
    span_error,
    token_usage,
    tool_output,
)
from transcripts.formats.otlp.model import CallMessage, LlmCall, SpanData, SpanRejected

NAME = "openinference"

_KEY = re.compile(r"^llm\.(?P<side>input|output)_messages\.(?P<index>\d+)\.message\.(?P<field>.+)$")
_CONTENT_FIELD = re.compile(r"^contents\.(?P<index>\d+)\.message_content\.(?P<field>.+)$")
_TOOL_CALL_FIELD = re.compile(r"^tool_calls\.(?P<index>\d+)\.tool_call\.(?P<field>.+)$")
_USAGE = (
    ("inputTokens", ("llm.token_count.prompt",)),
    ("outputTokens", ("llm.token_count.completion",)),
    ("totalTokens", ("llm.token_count.total",)),
    ("cachedInputTokens", ("llm.token_count.prompt_details.cache_read",)),
    ("reasoningTokens", ("llm.token_count.completion_details.reasoning",)),
)


def to_call(span: SpanData) -> LlmCall | None:
    """The model call an OpenInference LLM span records, None for any other span."""
    attributes = span.attributes
    kind = attributes.get("openinference.span.kind")
    if not isinstance(kind, str) or kind.upper() != "LLM":
        return None
    inputs, outputs = indexed(attributes, _KEY, ("input", "output"))
    if not inputs and not outputs:
        return None
    _invocation_parameters(attributes)
    tool_names: dict[str, str] = {}
    input_messages = [
        _message(inputs[index], f"llm.input_messages.{index}.message", tool_names)
        for index in sorted(inputs)
    ]
    output_messages = [
        _message(outputs[index], f"llm.output_messages.{index}.message", tool_names)
        for index in sorted(outputs)
    ]
    return LlmCall(
        span=span,
        convention=NAME,
        input_messages=input_messages,
        output_messages=output_messages,
        conversation_id=first_string(attributes, ("session.id", "gen_ai.conversation.id")),
        model=first_string(attributes, ("llm.model_name",)),
        provider=first_string(attributes, ("llm.provider", "llm.system")),
        usage=token_usage(attributes, _USAGE),
        finish_reason=None,
        agent_name=first_string(attributes, ("agent.name", "gen_ai.agent.name")),
        error=span_error(span),
    )


# --- attributes ----------------------------------------------------------------------------


def _invocation_parameters(attributes: Mapping[str, object]) -> None:
    """Checks `llm.invocation_parameters`, a JSON object, so a broken span is named early."""
    raw = attributes.get("llm.invocation_parameters")
    if raw is None:
        return
    if not isinstance(raw, str):
        raise SpanRejected("llm.invocation_parameters: expected a JSON string")
    try:
        value = json.loads(raw)
    except ValueError:
        raise SpanRejected("llm.invocation_parameters: not valid JSON") from None
    if not isinstance(value, dict):
        raise SpanRejected("llm.invocation_parameters: expected a JSON object")


# --- messages ------------------------------------------------------------------------------


def _message(fields: Mapping[str, object], where: str, tool_names: dict[str, str]) -> CallMessage:
    raw_role = fields.get("role")
    if not isinstance(raw_role, str) or raw_role.lower() not in ROLES:
        raise SpanRejected(f"{where}.role: expected system, user, assistant or tool")
    role = ROLES[raw_role.lower()]
    parts = _contents(fields, where)
    parts.extend(
        flat_tool_calls(
            fields,
            where,
            tool_names,
            field=_TOOL_CALL_FIELD,
            suffix=".tool_call",
            name_key="function.name",
            arguments_key="function.arguments",
        )
    )
    if role != "tool":
        return {"role": role, "parts": parts, "metadata": {}}
    call_id = fields.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise SpanRejected(f"{where}.tool_call_id: expected a non-empty string")
    name = fields.get("name")
    result: dict[str, object] = {
        "type": "tool-result",
        "toolCallId": call_id,
        "toolName": tool_names.get(call_id, name if isinstance(name, str) and name else None),
        "output": tool_output(parts),
        "isError": False,
    }
    return {"role": "tool", "parts": [result], "metadata": {}}


def _contents(fields: Mapping[str, object], where: str) -> list[dict[str, object]]:
    """Text and images: the multi-part `contents` list when given, else `content`."""
    contents: dict[int, dict[str, object]] = {}
    for key, value in fields.items():
        match = _CONTENT_FIELD.match(key)
        if match is not None:
            contents.setdefault(int(match["index"]), {})[match["field"]] = value
    if not contents:
        content = fields.get("content")
        if content is None:
            return []
        if not isinstance(content, str):
            raise SpanRejected(f"{where}.content: expected a string")
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, object]] = []
    for index in sorted(contents):
        item = contents[index]
        item_where = f"{where}.contents.{index}.message_content"
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if not isinstance(text, str):
                raise SpanRejected(f"{item_where}.text: expected a string")
            parts.append({"type": "text", "text": text})
        elif kind == "image":
            url = item.get("image.image.url")
            if not isinstance(url, str) or not url:
                raise SpanRejected(f"{item_where}.image.image.url: expected a non-empty string")
            parts.append({**file_part(mime_of(url), url)})
        elif not isinstance(kind, str):
            raise SpanRejected(f"{item_where}.type: expected a string")
    return parts
