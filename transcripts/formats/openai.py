"""OpenAI Chat Completions `messages`.

Export is the request body `{"messages": [...]}` and uses only fields the API accepts, so
some canonical content has no place in it and is dropped: reasoning parts, message ids,
timestamps, metadata other than `agentId` (sent as `name` when it fits the API's pattern),
the `isError` flag of tool results, file parts in assistant or tool messages, and file
names of images and audio. Tool outputs that are not strings are sent as JSON text, and in
assistant messages text comes before tool calls. Import keeps the body's other top-level
keys (model, tools, …) in `metadata.extra.openai` and puts them back on export.
"""

from __future__ import annotations

import re
from typing import Any

from .document import (
    TreeThread,
    active_path,
    data_url,
    dump_json_text,
    extra_of,
    file_part,
    linear_thread,
    make_message,
    output_text,
    parse_data_url,
    parse_json_text,
    set_extra,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def export_openai(thread: TreeThread) -> dict[str, Any]:
    """The active path as a Chat Completions request body."""
    body: dict[str, Any] = dict(thread.metadata.get("extra", {}).get("openai", {}))
    out: list[dict[str, Any]] = []
    for message in active_path(thread):
        out.extend(_export_message(message))
    body["messages"] = out
    return body


def _export_message(message: dict[str, Any]) -> list[dict[str, Any]]:
    role = message["role"]
    parts = message["parts"]
    if role == "tool":
        return [
            {
                "role": "tool",
                "tool_call_id": part["toolCallId"],
                "content": output_text(part["output"]),
            }
            for part in parts
            if part["type"] == "tool-result"
        ]
    texts = [part["text"] for part in parts if part["type"] == "text"]
    result: dict[str, Any] = {"role": role}
    if role == "system":
        result["role"] = extra_of(message, "openai").get("role", "system")
        result["content"] = _text_content(texts)
    elif role == "user":
        content = [_user_part(part) for part in parts if part["type"] in ("text", "file")]
        if len(content) == 1 and content[0]["type"] == "text":
            result["content"] = content[0]["text"]
        else:
            result["content"] = content
    else:
        raw_arguments = extra_of(message, "openai").get("arguments", {})
        calls = [
            {
                "id": part["toolCallId"],
                "type": "function",
                "function": {
                    "name": part["toolName"],
                    "arguments": _arguments(part, raw_arguments),
                },
            }
            for part in parts
            if part["type"] == "tool-call"
        ]
        if texts or not calls:
            result["content"] = _text_content(texts) if texts else ""
        if calls:
            result["tool_calls"] = calls
    agent = message["metadata"].get("agentId")
    if role != "tool" and isinstance(agent, str) and _NAME.match(agent):
        result["name"] = agent
    return [result]


def _arguments(part: dict[str, Any], raw_arguments: Any) -> str:
    """The source's own argument text when it still says the same, else compact JSON."""
    raw = raw_arguments.get(part["toolCallId"]) if isinstance(raw_arguments, dict) else None
    if isinstance(raw, str) and parse_json_text(raw) == part["input"]:
        return raw
    return dump_json_text(part["input"])


def _text_content(texts: list[str]) -> str | list[dict[str, Any]]:
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": text} for text in texts]


def _user_part(part: dict[str, Any]) -> dict[str, Any]:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    mime, url = part["mimeType"], part["url"]
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    inline = parse_data_url(url)
    if inline is not None and mime in _AUDIO_FORMATS:
        return {
            "type": "input_audio",
            "input_audio": {"data": inline[1], "format": _AUDIO_FORMATS[mime]},
        }
    file: dict[str, Any] = {"file_data": url}
    if "name" in part:
        file["filename"] = part["name"]
    return {"type": "file", "file": file}


def import_openai(data: Any) -> list[TreeThread]:
    """One linear thread from a messages list or a `{"messages": [...]}` body."""
    problems = Problems()
    extra: dict[str, Any] = {}
    if isinstance(data, dict):
        items = problems.array(data.get("messages"), "$.messages")
        extra = {key: value for key, value in data.items() if key != "messages"}
        base = "$.messages"
    else:
        items = problems.array(data, "$")
        base = "$"
    messages: list[dict[str, Any]] = []
    tool_names: dict[str, str] = {}
    for path, raw in problems.objects(items or [], base):
        message = _import_message(raw, path, problems, tool_names, f"m{len(messages)}")
        if message is None:
            continue
        previous = messages[-1] if messages else None
        # One canonical tool message answers all the calls of one assistant turn.
        if previous is not None and message["role"] == "tool" and previous["role"] == "tool":
            previous["parts"].extend(message["parts"])
        else:
            messages.append(message)
    problems.raise_if_any()
    metadata = {"extra": {"openai": extra}} if extra else {}
    return [linear_thread(messages, metadata=metadata)]


def _import_message(
    raw: dict[str, Any],
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    key: str,
) -> dict[str, Any] | None:
    role = raw.get("role")
    metadata: dict[str, Any] = {}
    name = raw.get("name")
    if isinstance(name, str) and role != "tool":
        metadata["agentId"] = name
    if role in ("tool", "function"):
        call_id = raw.get("tool_call_id", raw.get("call_id", raw.get("id", raw.get("name"))))
        call_id = problems.string(call_id, f"{path}.tool_call_id")
        content = _content_text(raw.get("content"), f"{path}.content", problems)
        if call_id is None or content is None:
            return None
        tool_name = tool_names.get(call_id, name if isinstance(name, str) else "")
        part = tool_result_part(call_id, tool_name, content)
        return make_message(key, None, "tool", [part], metadata=metadata)
    if role in ("system", "developer"):
        if role == "developer":
            set_extra(metadata, "openai", {"role": "developer"})
        parts = _content_parts(raw.get("content"), f"{path}.content", problems)
        return make_message(key, None, "system", parts, metadata=metadata)
    if role == "user":
        parts = _content_parts(raw.get("content"), f"{path}.content", problems)
        return make_message(key, None, "user", parts, metadata=metadata)
    if role == "assistant":
        parts = []
        if raw.get("content") is not None:
            parts = _content_parts(raw["content"], f"{path}.content", problems)
            parts = [part for part in parts if part["type"] != "text" or part["text"]]
        refusal = raw.get("refusal")
        if isinstance(refusal, str) and refusal:
            parts.append({"type": "text", "text": refusal})
            set_extra(metadata, "openai", {"refusal": True})
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            problems.add(f"{path}.tool_calls", "expected an array")
            calls = []
        legacy = raw.get("function_call")
        if isinstance(legacy, dict):
            calls = [*calls, {"id": f"{key}-call", "function": legacy}]
        for index, call in enumerate(calls):
            call_part = _tool_call(call, f"{path}.tool_calls[{index}]", problems)
            if call_part is not None:
                tool_names[call_part["toolCallId"]] = call_part["toolName"]
                parts.append(call_part)
                arguments = call["function"].get("arguments")
                if isinstance(arguments, str) and arguments != dump_json_text(call_part["input"]):
                    raw = {call_part["toolCallId"]: arguments}
                    set_extra(metadata, "openai", {"arguments": raw})
        return make_message(key, None, "assistant", parts, metadata=metadata)
    problems.add(f"{path}.role", "expected system, developer, user, assistant or tool")
    return None


def _tool_call(value: Any, path: str, problems: Problems) -> dict[str, Any] | None:
    call = problems.obj(value, path)
    if call is None:
        return None
    call_id = problems.req_string(call, "id", path)
    function = problems.obj(call.get("function"), f"{path}.function")
    if function is None or call_id is None:
        return None
    name = problems.req_string(function, "name", f"{path}.function")
    arguments = function.get("arguments", "{}")
    if name is None:
        return None
    payload = parse_json_text(arguments) if isinstance(arguments, str) else arguments
    return tool_call_part(call_id, name, payload)


def _content_text(value: Any, path: str, problems: Problems) -> str | None:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = _content_parts(value, path, problems)
    return "".join(part["text"] for part in parts if part["type"] == "text")


def _content_parts(value: Any, path: str, problems: Problems) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    items = problems.array(value, path)
    parts: list[dict[str, Any]] = []
    for index, item in enumerate(items or []):
        part = _content_part(item, f"{path}[{index}]", problems)
        if part is not None:
            parts.append(part)
    return parts


def _content_part(value: Any, path: str, problems: Problems) -> dict[str, Any] | None:
    item = problems.obj(value, path)
    if item is None:
        return None
    part_type = item.get("type")
    if part_type in ("text", "refusal"):
        text = problems.req_string(item, part_type, path)
        return None if text is None else {"type": "text", "text": text}
    if part_type == "image_url":
        image = problems.obj(item.get("image_url"), f"{path}.image_url")
        url = None if image is None else problems.req_string(image, "url", f"{path}.image_url")
        if url is None:
            return None
        inline = parse_data_url(url)
        return file_part(inline[0] if inline else "image/*", url)
    if part_type == "input_audio":
        audio = problems.obj(item.get("input_audio"), f"{path}.input_audio")
        if audio is None:
            return None
        data = problems.req_string(audio, "data", f"{path}.input_audio")
        fmt = problems.req_string(audio, "format", f"{path}.input_audio")
        if data is None or fmt is None:
            return None
        mime = "audio/mpeg" if fmt == "mp3" else f"audio/{fmt}"
        return file_part(mime, data_url(mime, data))
    if part_type == "file":
        file = problems.obj(item.get("file"), f"{path}.file")
        if file is None:
            return None
        url = file.get("file_data") or (
            f"openai-file://{file['file_id']}" if file.get("file_id") else None
        )
        if not isinstance(url, str):
            problems.add(f"{path}.file", "expected file_data or file_id")
            return None
        inline = parse_data_url(url)
        mime = inline[0] if inline else "application/octet-stream"
        return file_part(mime, url, file.get("filename"))
    problems.add(f"{path}.type", "expected text, refusal, image_url, input_audio or file")
    return None
