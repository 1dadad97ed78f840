"""Vercel AI SDK `experimental_telemetry` spans (`ai` v4 to v6) as LLM calls.

Each model call is an inner span (`ai.generateText.doGenerate`, `ai.streamText.doStream`,
and the `*Object` twins): `ai.prompt.messages` is the SDK's model messages (JSON), the step's
answer is `ai.response.text`, `ai.response.reasoning` and `ai.response.toolCalls`. The outer
`ai.generateText` / `ai.streamText` span repeats what its steps hold and is not a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from transcripts.formats.document import data_url, file_part, parse_json_text, set_extra
from transcripts.formats.otlp.conventions.common import span_error, token_usage
from transcripts.formats.otlp.model import CallMessage, LlmCall, SpanData, SpanRejected
from transcripts.jsonvalue import JsonObject

NAME = "ai_sdk"

_CALL_OPERATIONS = frozenset(
    {
        "ai.generateText.doGenerate",
        "ai.streamText.doStream",
        "ai.generateObject.doGenerate",
        "ai.streamObject.doStream",
    }
)
_CONVERSATION_KEYS = ("conversationId", "threadId", "chatId", "conversation_id", "thread_id")
_USAGE = (
    ("inputTokens", ("ai.usage.inputTokens", "ai.usage.promptTokens", "gen_ai.usage.input_tokens")),
    (
        "outputTokens",
        ("ai.usage.outputTokens", "ai.usage.completionTokens", "gen_ai.usage.output_tokens"),
    ),
    ("totalTokens", ("ai.usage.totalTokens",)),
    ("reasoningTokens", ("ai.usage.reasoningTokens",)),
    ("cachedInputTokens", ("ai.usage.cachedInputTokens",)),
)


def to_call(span: SpanData) -> LlmCall | None:
    """The model call an AI SDK `do*` span records, None for any other span."""
    attributes = span.attributes
    operation = attributes.get("ai.operationId")
    if operation not in _CALL_OPERATIONS and span.name not in _CALL_OPERATIONS:
        return None
    raw_messages = _json_array(attributes, "ai.prompt.messages")
    messages = _messages(raw_messages or [])
    return LlmCall(
        span=span,
        convention=NAME,
        input_messages=messages,
        output_messages=_answer(attributes),
        conversation_id=_conversation_id(attributes),
        model=_first_string(
            attributes,
            ("ai.response.model", "gen_ai.response.model", "ai.model.id", "gen_ai.request.model"),
        ),
        provider=_first_string(attributes, ("ai.model.provider", "gen_ai.system")),
        usage=token_usage(attributes, _USAGE),
        finish_reason=_first_string(
            attributes, ("ai.response.finishReason", "gen_ai.response.finish_reasons")
        ),
        agent_name=_first_string(attributes, ("ai.telemetry.functionId",)),
        error=span_error(span),
    )


# --- attributes ----------------------------------------------------------------------------


def _json_array(attributes: Mapping[str, object], key: str) -> list[object] | None:
    """The JSON value a string attribute holds, None when absent; rejects the wrong shape."""
    raw = attributes.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise SpanRejected(f"{key}: expected a JSON string")
    try:
        value: object = json.loads(raw)
    except ValueError:
        raise SpanRejected(f"{key}: not valid JSON") from None
    if not isinstance(value, list):
        raise SpanRejected(f"{key}: expected a JSON array")
    return value


def _first_string(attributes: Mapping[str, object], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        # gen_ai.response.finish_reasons is a string array; its first entry is this call's.
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
            value = value[0]
        if isinstance(value, str) and value:
            return value
    return None


def _conversation_id(attributes: Mapping[str, object]) -> str | None:
    keys = tuple(f"ai.telemetry.metadata.{key}" for key in _CONVERSATION_KEYS)
    found = _first_string(attributes, (*keys, "gen_ai.conversation.id"))
    if found is None:
        for key in keys:
            value = attributes.get(key)
            # Metadata values may be numbers when the app passes one.
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
    return found


# --- messages ------------------------------------------------------------------------------


def _messages(raw_messages: list[object]) -> list[CallMessage]:
    where = "ai.prompt.messages"
    tool_names: dict[str, str] = {}
    out: list[CallMessage] = []
    for n, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise SpanRejected(f"{where}[{n}]: expected an object")
        role = raw.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise SpanRejected(f"{where}[{n}].role: expected system, user, assistant or tool")
        content = raw.get("content")
        metadata: JsonObject = {}
        if isinstance(content, str):
            parts: list[dict[str, object]] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            parts = []
            signatures: list[str | None] = []
            for m, item in enumerate(content):
                part = _part(item, f"{where}[{n}].content[{m}]", tool_names)
                if part is not None:
                    parts.append(part)
                if part is not None and part["type"] == "reasoning":
                    signatures.append(_signature(item))
            # The answer a step records never holds the signature its next prompt repeats, so
            # the part goes without it (the two must compare equal) and the message keeps it.
            if any(signature is not None for signature in signatures):
                set_extra(metadata, NAME, {"reasoningSignatures": signatures})
        else:
            raise SpanRejected(f"{where}[{n}].content: expected a string or an array")
        out.append({"role": role, "parts": parts, "metadata": {**metadata}})
    return out


def _part(item: object, where: str, tool_names: dict[str, str]) -> dict[str, object] | None:
    """A canonical part for one content part; None for parts the tree does not keep."""
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise SpanRejected(f"{where}: expected an object with a type")
    kind = item["type"]
    if kind == "text":
        return {"type": "text", "text": _string(item, "text", where)}
    if kind == "reasoning":
        return {"type": "reasoning", "text": _string(item, "text", where)}
    if kind == "tool-call":
        call_id = _string(item, "toolCallId", where, non_empty=True)
        name = _string(item, "toolName", where, non_empty=True)
        tool_names[call_id] = name
        tool_input = item["input"] if "input" in item else item.get("args")
        if isinstance(tool_input, str):
            tool_input = parse_json_text(tool_input)
        return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": tool_input}
    if kind == "tool-result":
        call_id = _string(item, "toolCallId", where, non_empty=True)
        result_name = item.get("toolName")
        output, is_error = _tool_output(item)
        return {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": result_name
            if isinstance(result_name, str) and result_name
            else tool_names.get(call_id),
            "output": output,
            "isError": is_error,
        }
    if kind in ("image", "file"):
        return _file(item, kind, where)
    # redacted-reasoning, tool-approval parts and future kinds: nothing the tree can show.
    return None


def _string(item: Mapping[str, object], key: str, where: str, *, non_empty: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str) or (non_empty and not value):
        raise SpanRejected(f"{where}.{key}: expected a {'non-empty ' if non_empty else ''}string")
    return value


def _signature(item: Mapping[str, object]) -> str | None:
    """A reasoning part's signature, from v5+ provider options or the v4 field."""
    if isinstance(item.get("signature"), str):
        return str(item["signature"])
    for key in ("providerOptions", "providerMetadata"):
        options = item.get(key)
        anthropic = options.get("anthropic") if isinstance(options, dict) else None
        signature = anthropic.get("signature") if isinstance(anthropic, dict) else None
        if isinstance(signature, str):
            return signature
    return None


def _tool_output(item: Mapping[str, object]) -> tuple[object, bool]:
    """(output, isError) of a v5+ typed output or a v4 `result`/`isError` pair."""
    output = item.get("output")
    if isinstance(output, dict) and isinstance(output.get("type"), str):
        kind = output["type"]
        if kind in ("error-text", "error-json"):
            return output.get("value"), True
        if kind == "execution-denied":
            reason = output.get("reason")
            return reason if isinstance(reason, str) else "denied", True
        if kind in ("text", "json", "content"):
            return output.get("value"), False
    if "output" in item:
        return output, False
    return item.get("result"), item.get("isError") is True


def _file(item: Mapping[str, object], kind: str, where: str) -> dict[str, object]:
    """A file part: URLs stay URLs, base64 content (how telemetry writes bytes) a data URL."""
    content = item.get("image" if kind == "image" else "data")
    mime = item.get("mediaType") or item.get("mimeType")
    if not isinstance(mime, str) or not mime:
        mime = "image/*" if kind == "image" else "application/octet-stream"
    if isinstance(content, dict) and isinstance(content.get("href"), str):
        content = content["href"]  # a URL object serialized by JSON.stringify
    if not isinstance(content, str) or not content:
        raise SpanRejected(f"{where}.{'image' if kind == 'image' else 'data'}: expected a string")
    is_url = content.startswith(("http://", "https://", "data:", "file:", "gs:", "s3:"))
    return {**file_part(mime, content if is_url else data_url(mime, content), item.get("filename"))}


def _answer(attributes: Mapping[str, object]) -> list[CallMessage]:
    """The assistant message of the step: reasoning, text, then tool calls, as the SDK orders."""
    parts: list[dict[str, object]] = []
    reasoning = attributes.get("ai.response.reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append({"type": "reasoning", "text": reasoning})
    text = attributes.get("ai.response.text")
    if isinstance(text, str) and text:
        parts.append({"type": "text", "text": text})
    answered_object = attributes.get("ai.response.object")
    if isinstance(answered_object, str) and answered_object:
        parts.append({"type": "text", "text": answered_object})
    calls = _json_array(attributes, "ai.response.toolCalls") or []
    for n, call in enumerate(calls):
        where = f"ai.response.toolCalls[{n}]"
        if not isinstance(call, dict):
            raise SpanRejected(f"{where}: expected an object")
        part = _part({**call, "type": "tool-call"}, where, {})
        if part is not None:
            parts.append(part)
    if not parts:
        return []
    return [{"role": "assistant", "parts": parts, "metadata": {}}]
