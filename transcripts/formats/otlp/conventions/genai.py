"""OpenTelemetry GenAI semantic conventions, as Pydantic AI and the semconv emit them.

Reads the current content attributes (`gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.system_instructions`: JSON strings, or the same as structured attribute values) and
the older per-message form (span events `gen_ai.user.message`, ..., `gen_ai.choice`, or
Pydantic AI's `events` attribute holding them as a JSON list).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from transcripts.formats.otlp.conventions.common import token_usage
from transcripts.formats.otlp.model import CallMessage, LlmCall, SpanData, SpanEvent, SpanRejected

NAME = "genai"

# Spans of an agent or a tool carry gen_ai.* too, but they are not model calls.
_NOT_CALLS = frozenset({"invoke_agent", "create_agent", "execute_tool", "embeddings"})
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_URL_PART_MIME = {
    "image-url": "image/*",
    "audio-url": "audio/*",
    "video-url": "video/*",
    "document-url": "application/octet-stream",
}


def _json(value: object, what: str) -> object:
    """A JSON-string attribute decoded (structured values pass through), or SpanRejected."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            decoded: object = json.loads(value)
        except ValueError:
            raise SpanRejected(f"{what} is not valid JSON") from None
        return decoded
    return value


def _maybe_json(value: object) -> object:
    """Tool arguments: a JSON string when it is one, else the value as given."""
    if isinstance(value, str):
        try:
            decoded: object = json.loads(value)
        except ValueError:
            return value
        return decoded
    return value


def _text_of(part: Mapping[str, object]) -> str:
    for key in ("content", "text"):
        value = part.get(key)
        if isinstance(value, str):
            return value
    return ""


def _mime(part: Mapping[str, object], default: str) -> str:
    for key in ("mime_type", "media_type", "mimeType", "mediaType"):
        value = part.get(key)
        if isinstance(value, str) and value:
            return value
    modality = part.get("modality")
    return f"{modality}/*" if isinstance(modality, str) and modality else default


def _part(part: object, unmapped: list[object]) -> dict[str, object] | None:
    """A semconv (or Pydantic AI) message part as a canonical part; None: kept in unmapped."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        unmapped.append(part)
        return None
    kind = part.get("type", part.get("kind"))
    if kind == "text":
        return {"type": "text", "text": _text_of(part)}
    if kind in ("thinking", "reasoning"):
        reasoning: dict[str, object] = {"type": "reasoning", "text": _text_of(part)}
        if isinstance(part.get("signature"), str):
            reasoning["signature"] = part["signature"]
        return reasoning
    if kind in ("tool_call", "tool-call"):
        call_id, name = part.get("id"), part.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise SpanRejected("a tool_call part needs a string id and name")
        return {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": name,
            "input": _maybe_json(part.get("arguments")),
        }
    if kind in ("tool_call_response", "tool-call-response", "tool_result"):
        call_id = part.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise SpanRejected("a tool_call_response part needs a string id")
        name = part.get("name")
        output = part["response"] if "response" in part else part.get("result")
        return {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": name if isinstance(name, str) else None,
            "output": output,
            "isError": part.get("is_error") is True,
        }
    if kind in ("blob", "binary"):
        content = part.get("content", part.get("data"))
        if isinstance(content, bytes):
            content = base64.b64encode(content).decode()
        if not isinstance(content, str) or not content:
            unmapped.append(dict(part))
            return None
        mime = _mime(part, "application/octet-stream")
        return {"type": "file", "mimeType": mime, "url": f"data:{mime};base64,{content}"}
    if kind in ("uri", *_URL_PART_MIME):
        url = part.get("uri", part.get("url"))
        if not isinstance(url, str) or not url:
            unmapped.append(dict(part))
            return None
        return {
            "type": "file",
            "mimeType": _mime(part, _URL_PART_MIME.get(kind, "*/*")),
            "url": url,
        }
    if kind == "file" and isinstance(part.get("file_id"), str) and part["file_id"]:
        return {
            "type": "file",
            "mimeType": _mime(part, "application/octet-stream"),
            "url": part["file_id"],
            "name": part["file_id"],
        }
    unmapped.append(dict(part))
    return None


def _message(role: str, raw_parts: list[object]) -> list[CallMessage]:
    """One semconv message as canonical messages: tool results go to a `tool` message of their
    own (Pydantic AI sends them in a user message), the rest stays in role's message."""
    unmapped: list[object] = []
    parts = [p for p in (_part(raw, unmapped) for raw in raw_parts) if p is not None]
    if role == "tool":
        results, rest = parts, []
    else:
        results = [p for p in parts if p["type"] == "tool-result"]
        rest = [p for p in parts if p["type"] != "tool-result"]
    out: list[CallMessage] = []
    if results:
        out.append({"role": "tool", "parts": results, "metadata": {}})
    if rest or (unmapped and not results):
        metadata: dict[str, object] = {"otelUnmappedParts": unmapped} if unmapped else {}
        out.append({"role": role, "parts": rest, "metadata": metadata})
    elif unmapped:
        out[-1]["metadata"]["otelUnmappedParts"] = unmapped
    return out


def _messages(value: object, what: str) -> list[CallMessage]:
    """A `gen_ai.*.messages` attribute as canonical messages."""
    decoded = _json(value, what)
    if not isinstance(decoded, list):
        raise SpanRejected(f"{what} must be a JSON array of messages")
    out: list[CallMessage] = []
    for index, message in enumerate(decoded):
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            raise SpanRejected(f"{what}[{index}] needs a role of system, user, assistant or tool")
        parts = message.get("parts")
        if parts is None and "content" in message:
            parts = _legacy_content(message["content"])
        if not isinstance(parts, list):
            raise SpanRejected(f"{what}[{index}].parts must be an array")
        out.extend(_message(str(message["role"]), parts))
    return out


def _system_message(value: object) -> CallMessage | None:
    """`gen_ai.system_instructions` (parts, or a plain string) as a system message."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"role": "system", "parts": [{"type": "text", "text": value}], "metadata": {}}
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise SpanRejected("gen_ai.system_instructions must be a JSON array of parts")
    messages = _message("system", value)
    return messages[0] if messages else None


# --- the older per-message events ---------------------------------------------------------


def _legacy_content(content: object) -> list[object]:
    """Event `content`: a string, or a list of parts (strings or typed objects)."""
    if content is None:
        return []
    if isinstance(content, list):
        return content
    if isinstance(content, Mapping):
        return [content]
    return [str(content)]


def _legacy_tool_calls(value: object) -> list[object]:
    calls = _maybe_json(value)
    parts: list[object] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, Mapping):
            continue
        nested = call.get("function")
        function: Mapping[str, object] = nested if isinstance(nested, Mapping) else call
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return parts


def _legacy_message(role: str, body: Mapping[str, object]) -> list[CallMessage]:
    if role == "tool":
        part: dict[str, object] = {
            "type": "tool_call_response",
            "id": body.get("id", body.get("tool_call_id")),
            "name": body.get("name"),
            "response": body.get("content"),
        }
        return _message("tool", [part])
    parts = _legacy_content(body.get("content")) + _legacy_tool_calls(body.get("tool_calls"))
    return _message(role, parts)


def _legacy_events(span: SpanData) -> list[SpanEvent]:
    """The span's message events, from real span events or Pydantic AI's `events` attribute."""
    events = [e for e in span.events if e.name in _EVENT_ROLES or e.name == _CHOICE]
    if events or "events" not in span.attributes:
        return events
    listed = _json(span.attributes["events"], "events")
    if not isinstance(listed, list):
        raise SpanRejected("events must be a JSON array")
    return [
        SpanEvent(name=str(item["event.name"]), time_ns=span.start_ns, attributes=dict(item))
        for item in listed
        if isinstance(item, Mapping) and item.get("event.name") in (*_EVENT_ROLES, _CHOICE)
    ]


def _from_events(
    events: list[SpanEvent],
) -> tuple[list[CallMessage], list[CallMessage], str | None]:
    inputs: list[CallMessage] = []
    outputs: list[CallMessage] = []
    finish: str | None = None
    for event in events:
        body = event.attributes
        if event.name == _CHOICE:
            message = _maybe_json(body.get("message", {}))
            message = message if isinstance(message, Mapping) else {}
            role = message.get("role") if message.get("role") in _ROLES else "assistant"
            if not outputs:  # one answer: further choices are alternatives, not a sequence
                outputs.extend(_legacy_message(str(role), message))
            reason = body.get("finish_reason")
            if isinstance(reason, str) and finish is None:
                finish = reason
        else:
            inputs.extend(_legacy_message(_EVENT_ROLES[event.name], body))
    return inputs, outputs, finish


# --- the call ---------------------------------------------------------------------------


_USAGE = (
    ("inputTokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")),
    ("outputTokens", ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")),
    (
        "cachedInputTokens",
        ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.details.cache_read_tokens"),
    ),
)


def _str(attributes: Mapping[str, object], *names: str) -> str | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def to_call(span: SpanData) -> LlmCall | None:
    """The model call of a GenAI span, or None when the span is not one."""
    attributes = span.attributes
    if attributes.get("gen_ai.operation.name") in _NOT_CALLS:
        return None
    has_content = "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes
    events = [] if has_content else _legacy_events(span)
    if not has_content and not events:
        return None
    finish: str | None = None
    if has_content:
        inputs = _messages(attributes.get("gen_ai.input.messages", "[]"), "gen_ai.input.messages")
        raw_output = _json(attributes.get("gen_ai.output.messages", "[]"), "gen_ai.output.messages")
        first = raw_output[:1] if isinstance(raw_output, list) else raw_output
        outputs = _messages(first, "gen_ai.output.messages")
        head = first[0] if isinstance(first, list) and first else None
        reason = head.get("finish_reason") if isinstance(head, Mapping) else None
        if isinstance(reason, str):
            finish = reason
    else:
        inputs, outputs, finish = _from_events(events)
    system = attributes.get("gen_ai.system_instructions")
    if system is not None and not (inputs and inputs[0]["role"] == "system"):
        message = _system_message(system)
        if message is not None:
            inputs.insert(0, message)
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list) and reasons and isinstance(reasons[0], str):
        finish = reasons[0]
    error = None
    if span.status_code == 2:
        error = span.status_message or _str(attributes, "error.type") or "error"
    return LlmCall(
        span=span,
        convention=NAME,
        input_messages=inputs,
        output_messages=outputs,
        conversation_id=_str(attributes, "gen_ai.conversation.id"),
        model=_str(attributes, "gen_ai.response.model", "gen_ai.request.model"),
        provider=_str(attributes, "gen_ai.provider.name", "gen_ai.system"),
        usage=token_usage(attributes, _USAGE),
        finish_reason=finish,
        agent_name=_str(attributes, "gen_ai.agent.name", "agent_name"),
        error=error,
    )
