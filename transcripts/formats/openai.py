"""OpenAI Chat Completions `messages`.

Export is the request body `{"messages": [...]}` and uses only fields the API accepts. An
imported body comes back exactly: the shape of each content (string, list, null, missing),
`refusal`, argument text, the message's other fields (an assistant's `audio`, …), and each
content part's and tool message's own fields (image `detail`, a list content) ride in
`metadata.extra.openai` and the parts' `sourceFields`, and the body's other keys (model,
tools, …) in the thread's `metadata.extra.openai`. Only a deprecated `function_call` comes
back changed, as `tool_calls`.

Canonical content from elsewhere that has no place in the API is dropped on export:
reasoning parts, message ids, timestamps, metadata other than `agentId` (sent as `name` when
it fits the API's pattern), the `isError` flag of tool results, file parts in assistant or
tool messages, and file names of images and audio. Tool outputs that are not strings are
sent as JSON text, and in assistant messages text comes before tool calls.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    list_of,
    object_of,
    text_of,
)

from .document import (
    TreeThread,
    active_path,
    data_url,
    dump_json_text,
    extra_of,
    file_part,
    keep_source_fields,
    linear_thread,
    make_message,
    metadata_extra,
    output_text,
    parse_data_url,
    parse_json_text,
    parts_of,
    restore_source_fields,
    set_extra,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
FORMAT = "openai"
_FILE_ID_URL = "openai-file://"
# The message fields import reads into canonical ones.
_READ = ("role", "content", "name", "refusal", "tool_calls", "function_call")
# How an assistant message without text had its content: what the hint names, written back.
# ("absent": no content field is written.)
_EMPTY_CONTENT: JsonObject = {"null": None, "empty": ""}
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def export_openai(thread: TreeThread) -> dict[str, Any]:
    """The active path as a Chat Completions request body."""
    # Any: callers (generators, tests) index the written document freely.
    body: JsonObject = dict(metadata_extra(thread.metadata, "openai"))
    out: list[JsonObject] = []
    for message in active_path(thread):
        out.extend(export_message(message))
    body["messages"] = out
    return body


def export_message(message: JsonObject) -> list[JsonObject]:
    """One canonical message as the OpenAI chat messages it becomes (datasets use it too)."""
    role = message["role"]
    parts = parts_of(message)
    if role == "tool":
        return [
            restore_source_fields(part, FORMAT, _tool_message(part))
            for part in parts
            if part["type"] == "tool-result"
        ]
    hints = extra_of(message, FORMAT)
    texts = [part for part in parts if part["type"] == "text"]
    refusal = None
    if role == "assistant" and hints.get("refusal") is True and texts:
        # Import put the message's refusal after its content: the last text.
        refusal = texts.pop()
    result: JsonObject = {"role": role}
    if role == "system":
        result["role"] = hints.get("role", "system")
        result["content"] = _text_content(texts, hints)
    elif role == "user":
        content = [
            restore_source_fields(part, FORMAT, _user_part(part))
            for part in parts
            if part["type"] in ("text", "file")
        ]
        if len(content) == 1 and content[0]["type"] == "text" and hints.get("content") != "list":
            result["content"] = content[0]["text"]
        else:
            result["content"] = content
    else:
        raw_arguments = hints.get("arguments", {})
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
        shape = hints.get("content")
        if texts or shape == "list":
            result["content"] = _text_content(texts, hints)
        elif isinstance(shape, str) and shape in _EMPTY_CONTENT:
            result["content"] = _EMPTY_CONTENT[shape]
        elif not calls and shape != "absent":
            result["content"] = ""
        if refusal is not None:
            result["refusal"] = refusal["text"]
        if calls:
            result["tool_calls"] = calls
    agent = object_of(message["metadata"]).get("agentId")
    if role != "tool" and isinstance(agent, str) and _NAME.match(agent):
        result["name"] = agent
    others = hints.get("fields")
    if isinstance(others, dict):
        for key, value in others.items():
            result.setdefault(key, copy.deepcopy(value))
    return [result]


def _arguments(part: JsonObject, raw_arguments: JsonValue) -> str:
    """The source's own argument text when it still says the same, else compact JSON."""
    raw = raw_arguments.get(part["toolCallId"]) if isinstance(raw_arguments, dict) else None
    if isinstance(raw, str) and parse_json_text(raw) == part["input"]:
        return raw
    return dump_json_text(part["input"])


def _text_content(texts: list[JsonObject], hints: JsonObject) -> JsonValue:
    """One text as a string (unless the source had a list), else a list of text parts."""
    if len(texts) == 1 and hints.get("content") != "list":
        return texts[0]["text"]
    return [
        restore_source_fields(part, FORMAT, {"type": "text", "text": part["text"]})
        for part in texts
    ]


def _tool_message(part: JsonObject) -> JsonObject:
    return {
        "role": "tool",
        "tool_call_id": part["toolCallId"],
        "content": output_text(part["output"]),
    }


def _user_part(part: JsonObject) -> JsonObject:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    mime, url = text_of(part["mimeType"]), text_of(part["url"])
    if url.startswith(_FILE_ID_URL):
        return {"type": "file", "file": {"file_id": url[len(_FILE_ID_URL) :]}}
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    inline = parse_data_url(url)
    if inline is not None and mime in _AUDIO_FORMATS:
        return {
            "type": "input_audio",
            "input_audio": {"data": inline[1], "format": _AUDIO_FORMATS[mime]},
        }
    file: JsonObject = {"file_data": url}
    if "name" in part:
        file["filename"] = part["name"]
    return {"type": "file", "file": file}


def import_openai(data: object) -> list[TreeThread]:
    """One linear thread from a messages list or a `{"messages": [...]}` body."""
    problems = Problems()
    extra: JsonObject = {}
    if isinstance(data, dict):
        items = problems.array(data.get("messages"), "$.messages")
        extra = {key: value for key, value in data.items() if key != "messages"}
        base = "$.messages"
    else:
        items = problems.array(data, "$")
        base = "$"
    messages: list[JsonObject] = []
    tool_names: dict[str, str] = {}
    for path, raw in problems.objects(items or [], base):
        message = _import_message(raw, path, problems, tool_names, f"m{len(messages)}")
        if message is None:
            continue
        previous = messages[-1] if messages else None
        # One canonical tool message answers all the calls of one assistant turn.
        if previous is not None and message["role"] == "tool" and previous["role"] == "tool":
            list_of(previous["parts"]).extend(parts_of(message))
        else:
            messages.append(message)
    problems.raise_if_any()
    metadata: JsonObject = {"extra": {"openai": extra}} if extra else {}
    return [linear_thread(messages, metadata=metadata)]


def _import_message(
    raw: JsonObject,
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    key: str,
) -> JsonObject | None:
    role = raw.get("role")
    metadata: JsonObject = {}
    name = raw.get("name")
    if isinstance(name, str) and role != "tool":
        metadata["agentId"] = name
    if role in ("tool", "function"):
        given = raw.get("tool_call_id", raw.get("call_id", raw.get("id", raw.get("name"))))
        call_id = problems.string(given, f"{path}.tool_call_id")
        text = _content_text(raw.get("content"), f"{path}.content", problems)
        if call_id is None or text is None:
            return None
        tool_name = tool_names.get(call_id, name if isinstance(name, str) else "")
        part = tool_result_part(call_id, tool_name, text)
        # A list content, a name: what the tool message had beyond its text rides on the part.
        keep_source_fields(part, FORMAT, raw, _tool_message(part))
        return make_message(key, None, "tool", [part], metadata=metadata)
    content = raw.get("content")
    if isinstance(content, list):
        set_extra(metadata, FORMAT, {"content": "list"})
    # Fields of the message no canonical field holds (an assistant's `audio`, …).
    others = {key: copy.deepcopy(value) for key, value in raw.items() if key not in _READ}
    set_extra(metadata, FORMAT, {"fields": others} if others else {})
    if role in ("system", "developer"):
        if role == "developer":
            set_extra(metadata, FORMAT, {"role": "developer"})
        parts = _content_parts(content, f"{path}.content", problems)
        return make_message(key, None, "system", parts, metadata=metadata)
    if role == "user":
        parts = _content_parts(content, f"{path}.content", problems)
        return make_message(key, None, "user", parts, metadata=metadata)
    if role == "assistant":
        parts = []
        if content is not None:
            parts = _content_parts(content, f"{path}.content", problems)
            parts = [part for part in parts if part["type"] != "text" or part["text"]]
        shape = "absent" if "content" not in raw else "null" if content is None else "empty"
        if content is None or content == "":
            set_extra(metadata, FORMAT, {"content": shape})
        refusal = raw.get("refusal")
        if isinstance(refusal, str) and refusal:
            parts.append({"type": "text", "text": refusal})
            set_extra(metadata, FORMAT, {"refusal": True})
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            problems.add(f"{path}.tool_calls", "expected an array")
            calls = []
        legacy = raw.get("function_call")
        if isinstance(legacy, dict):
            calls = [*calls, {"id": f"{key}-call", "function": legacy}]
        raw_arguments: dict[str, str] = {}
        for index, call in enumerate(calls):
            call_part = _tool_call(call, f"{path}.tool_calls[{index}]", problems)
            if call_part is not None:
                call_id = text_of(call_part["toolCallId"])
                tool_names[call_id] = text_of(call_part["toolName"])
                parts.append(call_part)
                arguments = object_of(object_of(call).get("function")).get("arguments")
                if isinstance(arguments, str) and arguments != dump_json_text(call_part["input"]):
                    raw_arguments[call_id] = arguments
        set_extra(metadata, FORMAT, {"arguments": raw_arguments} if raw_arguments else {})
        return make_message(key, None, "assistant", parts, metadata=metadata)
    problems.add(f"{path}.role", "expected system, developer, user, assistant or tool")
    return None


def _tool_call(value: JsonValue, path: str, problems: Problems) -> JsonObject | None:
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


def _content_text(value: JsonValue, path: str, problems: Problems) -> str | None:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = _content_parts(value, path, problems)
    return "".join(text_of(part["text"]) for part in parts if part["type"] == "text")


def _content_parts(value: JsonValue, path: str, problems: Problems) -> list[JsonObject]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    items = problems.array(value, path)
    parts: list[JsonObject] = []
    for index, item in enumerate(items or []):
        part = _content_part(item, f"{path}[{index}]", problems)
        if part is not None:
            parts.append(part)
    return parts


def _content_part(value: JsonValue, path: str, problems: Problems) -> JsonObject | None:
    item = problems.obj(value, path)
    if item is None:
        return None
    part = _content_item(item, path, problems)
    if part is not None:
        keep_source_fields(part, FORMAT, item, _user_part(part))
    return part


def _content_item(item: JsonObject, path: str, problems: Problems) -> JsonObject | None:
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
        given = file.get("file_data") or (
            f"openai-file://{file['file_id']}" if file.get("file_id") else None
        )
        if not isinstance(given, str):
            problems.add(f"{path}.file", "expected file_data or file_id")
            return None
        inline = parse_data_url(given)
        mime = inline[0] if inline else "application/octet-stream"
        return file_part(mime, given, file.get("filename"))
    problems.add(f"{path}.type", "expected text, refusal, image_url, input_audio or file")
    return None
