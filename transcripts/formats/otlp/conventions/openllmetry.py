"""OpenLLMetry (Traceloop) spans with flat `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` content.

Instrumentations that moved to `gen_ai.input.messages` are read by the GenAI convention,
which the registry tries first. Content is a string, or a JSON list of provider content
blocks (OpenAI `text`/`image_url`, Anthropic `text`/`image`/`thinking`/`tool_use`/
`tool_result`). Only the first choice is kept: other choices are alternatives, not turns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from transcripts.formats.document import data_url, file_part
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

NAME = "openllmetry"

_KEY = re.compile(r"^gen_ai\.(?P<side>prompt|completion)\.(?P<index>\d+)\.(?P<field>.+)$")
_TOOL_CALL_FIELD = re.compile(r"^tool_calls\.(?P<index>\d+)\.(?P<field>id|name|arguments)$")
_CALL_TYPES = frozenset({"chat", "completion"})
_FINISH = {
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "tool_use": "tool-calls",
    "content_filter": "content-filter",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
}
_CONVERSATION_KEYS = ("session_id", "conversation_id", "conversationId", "thread_id", "chat_id")
_USAGE = (
    ("inputTokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")),
    ("outputTokens", ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")),
    ("totalTokens", ("llm.usage.total_tokens", "gen_ai.usage.total_tokens")),
    ("cachedInputTokens", ("gen_ai.usage.cache_read_input_tokens",)),
    ("reasoningTokens", ("gen_ai.usage.reasoning_tokens",)),
)


def to_call(span: SpanData) -> LlmCall | None:
    """The model call a Traceloop chat/completion span records, None for any other span."""
    attributes = span.attributes
    request_type = attributes.get("llm.request.type")
    if request_type is not None and request_type not in _CALL_TYPES:
        return None
    prompts, completions = indexed(attributes, _KEY, ("prompt", "completion"))
    if not prompts and not completions:
        return None
    tool_names: dict[str, str] = {}
    input_messages: list[CallMessage] = []
    for index in sorted(prompts):
        input_messages.extend(_message(prompts[index], f"gen_ai.prompt.{index}", tool_names))
    output_messages: list[CallMessage] = []
    finish_reason = None
    if completions:
        first = min(completions)
        output_messages = _message(completions[first], f"gen_ai.completion.{first}", tool_names)
        reason = completions[first].get("finish_reason")
        if isinstance(reason, str) and reason:
            finish_reason = _FINISH.get(reason, reason)
    return LlmCall(
        span=span,
        convention=NAME,
        input_messages=input_messages,
        output_messages=output_messages,
        conversation_id=_conversation_id(attributes),
        model=first_string(attributes, ("gen_ai.response.model", "gen_ai.request.model")),
        provider=first_string(attributes, ("gen_ai.provider.name", "gen_ai.system")),
        usage=token_usage(attributes, _USAGE),
        finish_reason=finish_reason,
        agent_name=first_string(
            attributes, ("gen_ai.agent.name", "traceloop.entity.name", "traceloop.workflow.name")
        ),
        error=span_error(span),
    )


# --- attributes ----------------------------------------------------------------------------


def _conversation_id(attributes: Mapping[str, object]) -> str | None:
    keys = tuple(f"traceloop.association.properties.{key}" for key in _CONVERSATION_KEYS)
    for key in (*keys, "gen_ai.conversation.id"):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


# --- messages ------------------------------------------------------------------------------


def _message(
    fields: Mapping[str, object], where: str, tool_names: dict[str, str]
) -> list[CallMessage]:
    """The canonical messages of one flat message: Anthropic tool results split off a user turn."""
    raw_role = fields.get("role", "assistant" if where.startswith("gen_ai.completion") else None)
    if not isinstance(raw_role, str) or raw_role.lower() not in ROLES:
        raise SpanRejected(f"{where}.role: expected system, user, assistant or tool")
    role = ROLES[raw_role.lower()]
    parts = _content(fields.get("content"), f"{where}.content", tool_names)
    parts.extend(flat_tool_calls(fields, where, tool_names, field=_TOOL_CALL_FIELD))
    if role == "tool":
        call_id = fields.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise SpanRejected(f"{where}.tool_call_id: expected a non-empty string")
        # A tool message's content is what the tool returned.
        result: dict[str, object] = {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": tool_names.get(call_id),
            "output": tool_output(parts),
            "isError": False,
        }
        return [{"role": "tool", "parts": [result], "metadata": {}}]
    results = [part for part in parts if part["type"] == "tool-result"]
    rest = [part for part in parts if part["type"] != "tool-result"]
    out: list[CallMessage] = []
    if results:
        out.append({"role": "tool", "parts": results, "metadata": {}})
    if rest or not results:
        out.append({"role": role, "parts": rest, "metadata": {}})
    return out


def _content(content: object, where: str, tool_names: dict[str, str]) -> list[dict[str, object]]:
    if content is None:
        return []
    if not isinstance(content, str):
        raise SpanRejected(f"{where}: expected a string")
    blocks = _blocks(content)
    if blocks is None:
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, object]] = []
    for n, block in enumerate(blocks):
        part = _block(block, f"{where}[{n}]", tool_names)
        if part is not None:
            parts.append(part)
    return parts


def _blocks(content: str) -> list[dict[str, object]] | None:
    """The content blocks a JSON list holds; None when the content is plain text."""
    if not content.lstrip().startswith("["):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None  # text that merely starts with a bracket
    if isinstance(value, list) and all(
        isinstance(item, dict) and isinstance(item.get("type"), str) for item in value
    ):
        return value
    return None


def _block(
    block: Mapping[str, object], where: str, tool_names: dict[str, str]
) -> dict[str, object] | None:
    """A canonical part for one provider content block; None for blocks the tree does not keep."""
    kind = block["type"]
    if kind in ("text", "input_text", "output_text"):
        return {"type": "text", "text": _string(block, "text", where)}
    if kind == "thinking":
        part: dict[str, object] = {"type": "reasoning", "text": _string(block, "thinking", where)}
        if isinstance(block.get("signature"), str):
            part["signature"] = block["signature"]
        return part
    if kind == "tool_use":
        call_id = _string(block, "id", where, non_empty=True)
        name = _string(block, "name", where, non_empty=True)
        tool_names[call_id] = name
        return {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": name,
            "input": block.get("input"),
        }
    if kind == "tool_result":
        call_id = _string(block, "tool_use_id", where, non_empty=True)
        output = block.get("content")
        if isinstance(output, list) and all(
            isinstance(item, dict) and item.get("type") == "text" for item in output
        ):
            output = "".join(str(item.get("text", "")) for item in output)
        return {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": tool_names.get(call_id),
            "output": output,
            "isError": block.get("is_error") is True,
        }
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str) or not url:
            raise SpanRejected(f"{where}.image_url.url: expected a non-empty string")
        return {**file_part(mime_of(url), url)}
    if kind in ("image", "document"):
        source = block.get("source")
        if isinstance(source, dict) and isinstance(source.get("data"), str):
            mime = source.get("media_type")
            mime = mime if isinstance(mime, str) and mime else "application/octet-stream"
            return {**file_part(mime, data_url(mime, source["data"]))}
        if isinstance(source, dict) and isinstance(source.get("url"), str) and source["url"]:
            return {**file_part(mime_of(source["url"]), source["url"])}
        raise SpanRejected(f"{where}.source: expected base64 data or a url")
    return None


def _string(block: Mapping[str, object], key: str, where: str, *, non_empty: bool = False) -> str:
    value = block.get(key)
    if not isinstance(value, str) or (non_empty and not value):
        raise SpanRejected(f"{where}.{key}: expected a {'non-empty ' if non_empty else ''}string")
    return value
