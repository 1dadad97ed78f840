"""Pydantic AI message history, as `ModelMessagesTypeAdapter` dumps it to JSON.

A request becomes one canonical message per run of same-role parts (system prompts, each
user prompt, tool returns and retries); a response becomes one assistant message. Fields
with no canonical place (run ids, provider details, the raw usage, each timestamp's own
text, …) ride in `metadata.extra.pydantic_ai` and are written back on export, so an
imported history comes back exactly, through the database too. Export writes an error tool
result as a `retry-prompt` when its output is text, else as a `tool-return` with
`outcome: "failed"`. Lost on export: `agentId` and `hidden`, file names, and assistant file
parts that are not data URLs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    as_str,
    list_of,
    object_of,
    objects_in,
    text_of,
)

from .document import (
    TreeThread,
    active_path,
    data_url,
    dump_json_text,
    extra_of,
    file_part,
    linear_thread,
    make_message,
    parse_data_url,
    parse_json_text,
    parts_of,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems, is_int

_FINISH_REASONS = ("stop", "length", "content_filter", "tool_call", "error")
_ERROR_OUTCOMES = ("failed", "denied", "retried", "interrupted")
_USAGE_NAMES = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cachedInputTokens",
    "output_reasoning_tokens": "reasoningTokens",
}
_URL_KINDS = {"image": "image-url", "audio": "audio-url", "video": "video-url"}


def export_pydantic_ai(thread: TreeThread) -> list[JsonObject]:
    """The active path as a JSON list of ModelRequest / ModelResponse."""
    out: list[JsonObject] = []
    for message in active_path(thread):
        extra = extra_of(message, "pydantic_ai")
        if message["role"] == "assistant":
            out.append(_response(message, extra))
            continue
        starts = isinstance(extra.get("request"), dict)
        if not out or out[-1]["kind"] != "request" or starts:
            request: JsonObject = {"kind": "request", "parts": []}
            request.update(copy.deepcopy(object_of(extra.get("request"))))
            out.append(request)
        list_of(out[-1]["parts"]).extend(_request_parts(message, extra))
    return out


def _with_leftovers(parts: list[JsonObject], extra: JsonObject) -> list[JsonObject]:
    """Put back the source fields import kept, matching parts by position."""
    leftovers = extra.get("parts")
    if not isinstance(leftovers, list) or len(leftovers) != len(parts):
        return parts
    for part, leftover in zip(parts, leftovers, strict=True):
        if not isinstance(leftover, dict):
            continue
        kind = leftover.get("part_kind")
        # The source's part kind wins when the content fits it (a retry needs text or a list).
        if kind == "tool-return" and part["part_kind"] == "retry-prompt":
            part["part_kind"] = kind
        elif kind == "retry-prompt" and isinstance(part.get("content"), str | list):
            part["part_kind"] = kind
            part.pop("outcome", None)
        failed = part.get("outcome") in _ERROR_OUTCOMES
        for key, value in leftover.items():
            # The source's own timestamp text wins over createdAt, as for a response, and its
            # outcome over ours while both say the same about failure.
            wins = key == "timestamp" or (key == "outcome" and (value in _ERROR_OUTCOMES) == failed)
            if wins or key not in part:
                part[key] = copy.deepcopy(value)
    return parts


def _request_parts(message: JsonObject, extra: JsonObject) -> list[JsonObject]:
    stamp: JsonObject = {"timestamp": message["createdAt"]} if message["createdAt"] else {}
    role = message["role"]
    parts: list[JsonObject] = []
    if role == "system":
        parts = [
            {"part_kind": "system-prompt", "content": part["text"], **stamp}
            for part in parts_of(message)
            if part["type"] == "text"
        ]
    elif role == "user":
        items: JsonArray = []
        for part in parts_of(message):
            if part["type"] == "text":
                items.append(part["text"])
            elif part["type"] == "file":
                items.append(_user_file(part))
        stored = extra.get("items")
        if isinstance(stored, list) and len(stored) == len(items):
            for entry, leftover in zip(items, stored, strict=True):
                if isinstance(entry, dict) and isinstance(leftover, dict):
                    entry.update(copy.deepcopy(leftover))
        single = len(items) == 1 and isinstance(items[0], str) and not isinstance(stored, list)
        content: JsonValue = items[0] if single else items
        parts = [{"part_kind": "user-prompt", "content": content, **stamp}]
    else:
        for part in parts_of(message):
            if part["type"] != "tool-result":
                continue
            output = part["output"]
            common: JsonObject = {
                "tool_name": part["toolName"],
                "tool_call_id": part["toolCallId"],
                **stamp,
            }
            if part["isError"] and isinstance(output, str):
                parts.append({"part_kind": "retry-prompt", "content": output, **common})
            elif part["isError"]:
                parts.append(
                    {"part_kind": "tool-return", "content": output, "outcome": "failed", **common}
                )
            else:
                parts.append({"part_kind": "tool-return", "content": output, **common})
    others = copy.deepcopy(objects_in(extra.get("other_parts")))
    return _with_leftovers(parts, extra) + others


def _user_file(part: JsonObject) -> JsonObject:
    mime, url = text_of(part["mimeType"]), text_of(part["url"])
    inline = parse_data_url(url)
    if inline is not None:
        return {"kind": "binary", "data": inline[1], "media_type": mime}
    kind = _URL_KINDS.get(mime.split("/")[0], "document-url")
    return {"kind": kind, "url": url, "media_type": mime}


def _response(message: JsonObject, extra: JsonObject) -> JsonObject:
    metadata = object_of(message["metadata"])
    parts: list[JsonObject] = []
    for part in parts_of(message):
        part_type = part["type"]
        if part_type == "text":
            parts.append({"part_kind": "text", "content": part["text"]})
        elif part_type == "reasoning":
            thinking: JsonObject = {"part_kind": "thinking", "content": part["text"]}
            if "signature" in part:
                thinking["signature"] = part["signature"]
            parts.append(thinking)
        elif part_type == "tool-call":
            value = part["input"]
            builtin = part["toolCallId"] in list_of(extra.get("builtin_calls"))
            raw_args = object_of(extra.get("raw_args")).get(text_of(part["toolCallId"]))
            parts.append(
                {
                    "part_kind": "builtin-tool-call" if builtin else "tool-call",
                    "tool_name": part["toolName"],
                    "tool_call_id": part["toolCallId"],
                    "args": raw_args
                    if isinstance(raw_args, str) and parse_json_text(raw_args) == value
                    else value
                    if value is None or isinstance(value, dict)
                    else dump_json_text(value),
                }
            )
        elif part_type == "tool-result":
            parts.append(
                {
                    "part_kind": "builtin-tool-return",
                    "tool_name": part["toolName"],
                    "tool_call_id": part["toolCallId"],
                    "content": part["output"],
                }
            )
        elif part_type == "file":
            inline = parse_data_url(text_of(part["url"]))
            if inline is not None:
                content: JsonObject = {
                    "kind": "binary",
                    "data": inline[1],
                    "media_type": part["mimeType"],
                }
                parts.append({"part_kind": "file", "content": content})
    others = copy.deepcopy(objects_in(extra.get("other_parts")))
    response: JsonObject = {"kind": "response", "parts": _with_leftovers(parts, extra) + others}
    kept_usage, usage = extra.get("usage"), metadata.get("usage")
    if isinstance(kept_usage, dict):
        response["usage"] = copy.deepcopy(kept_usage)
    elif isinstance(usage, dict):
        names = {camel: snake for snake, camel in _USAGE_NAMES.items()}
        response["usage"] = {names[key]: value for key, value in usage.items() if key in names}
    if "model" in metadata:
        response["model_name"] = metadata["model"]
    if metadata.get("finishReason") in _FINISH_REASONS:
        response["finish_reason"] = metadata["finishReason"]
    if message["createdAt"]:
        response["timestamp"] = message["createdAt"]
    for key, value in object_of(extra.get("response")).items():
        if key == "timestamp" or key not in response:
            response[key] = copy.deepcopy(value)
    return response


def import_pydantic_ai(data: object) -> list[TreeThread]:
    """One linear thread from a ModelMessagesTypeAdapter JSON list."""
    problems = Problems()
    items = problems.array(data, "$") or []
    messages: list[JsonObject] = []
    for path, raw in problems.objects(items, "$"):
        parts = problems.array(raw.get("parts"), f"{path}.parts")
        if parts is None:
            continue
        if raw.get("kind") == "request":
            messages.extend(_import_request(raw, parts, path, problems, len(messages)))
        elif raw.get("kind") == "response":
            messages.append(_import_response(raw, parts, path, problems, f"m{len(messages)}"))
        else:
            problems.add(f"{path}.kind", "expected request or response")
    problems.raise_if_any()
    return [linear_thread(messages)]


def _leftover(raw: JsonObject, used: tuple[str, ...]) -> JsonObject:
    return {key: copy.deepcopy(value) for key, value in raw.items() if key not in used}


@dataclass
class _Group:
    """One run of same-role parts of a request: the canonical message it becomes."""

    role: str
    at: str | None
    parts: list[JsonObject] = field(default_factory=list)
    # The source parts' fields no canonical field holds, one dict per part.
    left: list[JsonObject] = field(default_factory=list)
    # Parts with no canonical type, kept as they are.
    other: list[JsonObject] = field(default_factory=list)
    # Per item of a list prompt, its leftover fields (None when the prompt was a string).
    items: list[JsonObject] | None = None


def _import_request(
    raw: JsonObject, items: JsonArray, path: str, problems: Problems, start: int
) -> list[JsonObject]:
    groups: list[_Group] = []

    def group(role: str, created_at: JsonValue, fresh: bool = False) -> _Group:
        if fresh or not groups or groups[-1].role != role:
            groups.append(_Group(role, as_str(created_at)))
        return groups[-1]

    for ppath, part in problems.objects(items, f"{path}.parts"):
        kind = part.get("part_kind")
        stamp = part.get("timestamp")
        if kind == "system-prompt":
            text = problems.req_string(part, "content", ppath)
            if text is not None:
                target = group("system", stamp)
                target.parts.append({"type": "text", "text": text})
                target.left.append(_leftover(part, ("content", "part_kind")))
        elif kind == "user-prompt":
            converted = _user_content(part.get("content"), f"{ppath}.content", problems)
            target = group("user", stamp, fresh=True)
            target.parts.extend(converted)
            content = part.get("content")
            if isinstance(content, list):
                used_keys = ("kind", "url", "data", "media_type", "content")
                target.items = [
                    _leftover(item, used_keys) if isinstance(item, dict) else {} for item in content
                ]
            target.left.append(_leftover(part, ("content", "part_kind")))
        elif kind in ("tool-return", "retry-prompt"):
            call_id = problems.req_string(part, "tool_call_id", ppath)
            name = part.get("tool_name")
            if kind == "retry-prompt" and name is None:
                content = part.get("content")
                text = content if isinstance(content, str) else dump_json_text(content)
                target = group("user", stamp, fresh=True)
                target.parts.append({"type": "text", "text": text})
                target.left.append(_leftover(part, ("content",)))
                continue
            tool_name = problems.string(name, f"{ppath}.tool_name")
            if tool_name is None or call_id is None:
                continue
            is_error = kind == "retry-prompt" or part.get("outcome") in _ERROR_OUTCOMES
            output = copy.deepcopy(part.get("content"))
            target = group("tool", stamp)
            target.parts.append(tool_result_part(call_id, tool_name, output, is_error=is_error))
            used = ("content", "tool_name", "tool_call_id")
            target.left.append(_leftover(part, used))
        elif isinstance(kind, str):
            # Newer request parts (instruction deltas, retry feedback, …) are kept as they are.
            group(groups[-1].role if groups else "user", stamp).other.append(copy.deepcopy(part))
        else:
            problems.add(f"{ppath}.part_kind", "expected a string")
    out = []
    envelope = _leftover(raw, ("kind", "parts"))
    for offset, item in enumerate(groups):
        extra: JsonObject = {}
        if offset == 0:
            extra["request"] = envelope
        if any(item.left):
            extra["parts"] = item.left
        if item.other:
            extra["other_parts"] = item.other
        if item.items is not None:
            # Kept even when empty: it says the prompt was a list, not one string.
            extra["items"] = item.items
        key = f"m{start + offset}"
        metadata: JsonObject = {"extra": {"pydantic_ai": extra}}
        out.append(make_message(key, None, item.role, item.parts, item.at, metadata))
    return out


def _user_content(value: JsonValue, path: str, problems: Problems) -> list[JsonObject]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    items = problems.array(value, path) or []
    parts: list[JsonObject] = []
    for index, item in enumerate(items):
        ipath = f"{path}[{index}]"
        if isinstance(item, str):
            parts.append({"type": "text", "text": item})
            continue
        content = problems.obj(item, ipath)
        if content is None:
            continue
        kind = content.get("kind")
        if kind == "binary":
            data = problems.req_string(content, "data", ipath)
            mime = problems.req_string(content, "media_type", ipath)
            if data is not None and mime is not None:
                parts.append(file_part(mime, data_url(mime, data)))
        elif kind in ("image-url", "audio-url", "video-url", "document-url"):
            url = problems.req_string(content, "url", ipath)
            given = as_str(content.get("media_type"))
            if url is not None:
                fallback = (
                    f"{kind.split('-')[0]}/*"
                    if kind != "document-url"
                    else "application/octet-stream"
                )
                parts.append(file_part(given if given is not None else fallback, url))
        elif kind == "text" and isinstance(content.get("content"), str):
            parts.append({"type": "text", "text": content["content"]})
        else:
            problems.add(f"{ipath}.kind", "expected binary, a *-url kind or text")
    return parts


def _import_response(
    raw: JsonObject, items: JsonArray, path: str, problems: Problems, key: str
) -> JsonObject:
    parts: list[JsonObject] = []
    leftovers: list[JsonObject] = []
    others: list[JsonObject] = []
    builtin: list[str] = []
    raw_args: dict[str, str] = {}
    for ppath, part in problems.objects(items, f"{path}.parts"):
        kind = part.get("part_kind")
        converted: JsonObject | None = None
        used: tuple[str, ...] = ("part_kind", "content")
        if kind in ("text", "thinking"):
            text = problems.req_string(part, "content", ppath)
            if text is not None and kind == "text":
                converted = {"type": "text", "text": text}
            elif text is not None:
                converted = {"type": "reasoning", "text": text}
                signature = problems.opt_string(part.get("signature"), f"{ppath}.signature")
                if signature is not None:
                    converted["signature"] = signature
                    used = ("part_kind", "content", "signature")
        elif kind in ("tool-call", "builtin-tool-call"):
            name = problems.req_string(part, "tool_name", ppath)
            call_id = problems.req_string(part, "tool_call_id", ppath)
            args = part.get("args")
            if name is not None and call_id is not None:
                payload = parse_json_text(args) if isinstance(args, str) else copy.deepcopy(args)
                if isinstance(args, str):
                    raw_args[call_id] = args
                converted = tool_call_part(call_id, name, payload)
                used = ("part_kind", "tool_name", "tool_call_id", "args")
                if kind == "builtin-tool-call":
                    builtin.append(call_id)
        elif kind == "builtin-tool-return":
            name = problems.req_string(part, "tool_name", ppath)
            call_id = problems.req_string(part, "tool_call_id", ppath)
            if name is not None and call_id is not None:
                converted = tool_result_part(call_id, name, copy.deepcopy(part.get("content")))
                used = ("part_kind", "tool_name", "tool_call_id", "content")
        elif kind == "file":
            files = _user_content([part.get("content")], f"{ppath}.content", problems)
            converted = files[0] if files else None
        elif isinstance(kind, str):
            others.append(copy.deepcopy(part))
        else:
            problems.add(f"{ppath}.part_kind", "expected a string")
        if converted is not None:
            parts.append(converted)
            leftovers.append(_leftover(part, used))
    metadata: JsonObject = {}
    extra: JsonObject = {}
    model = raw.get("model_name")
    if isinstance(model, str):
        metadata["model"] = model
    finish = raw.get("finish_reason")
    if isinstance(finish, str):
        metadata["finishReason"] = finish
    usage = raw.get("usage")
    if isinstance(usage, dict):
        mapped: dict[str, int] = {
            camel: count
            for snake, camel in _USAGE_NAMES.items()
            if is_int(count := usage.get(snake))
            and (count or camel in ("inputTokens", "outputTokens"))
        }
        if "inputTokens" in mapped and "outputTokens" in mapped:
            mapped["totalTokens"] = mapped["inputTokens"] + mapped["outputTokens"]
        metadata["usage"] = mapped
        extra["usage"] = copy.deepcopy(usage)
    stamp = raw.get("timestamp")
    # model_name and finish_reason are kept for when metadata has none (null, a reason we do
    # not map); the timestamp's own text wins over createdAt, which a database trip rewrites.
    extra["response"] = _leftover(raw, ("kind", "parts", "usage"))
    if any(leftovers):
        extra["parts"] = leftovers
    if others:
        extra["other_parts"] = others
    if builtin:
        extra["builtin_calls"] = builtin
    if raw_args:
        extra["raw_args"] = raw_args
    metadata["extra"] = {"pydantic_ai": extra}
    created = stamp if isinstance(stamp, str) else None
    return make_message(key, None, "assistant", parts, created, metadata)
