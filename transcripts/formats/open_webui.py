"""Open WebUI chat export (a JSON array of chats, from "Export chats" or one chat's export).

A chat is `{id, title, chat: {history: {messages: {id: {id, parentId, childrenIds, role,
content, model, timestamp, files?, output?}}, currentId}, messages: [...]}, created_at,
updated_at, ...}`. The history is the tree (edits and regenerations are siblings, as are the
answers of several models to one prompt); the active leaf is `currentId`. A chat without a
history falls back to its linear `messages`.

An assistant's `output` (Responses-style items, newer versions) gives its parts: `reasoning`
→ reasoning, `function_call` → tool call, `function_call_output` → tool result, `message` →
text. Without it, the `<details type="reasoning|tool_calls|code_interpreter">` blocks Open
WebUI writes into `content` are read into the same parts and the rest stays text. Files that
are data or web URLs become file parts; files kept on the Open WebUI server become labelled
parts and report entries. The raw content stays in `metadata.extra.open_webui`.
"""

from __future__ import annotations

import base64
import copy
import html
import json
import re

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    nonempty,
    object_of,
)

from .document import TreeThread, file_part, make_message, tool_call_part, tool_result_part
from .sources import (
    Skips,
    file_parts,
    import_each,
    iso_time,
    labelled,
    newest_leaf,
    placed_messages,
)
from .validation import Problems

_ROLES = ("user", "assistant", "system")
_DETAILS = re.compile(
    r'<details\s+type="(?P<type>[^"]+)"(?P<attrs>[^>]*)>(?P<body>.*?)</details>', re.S
)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_SUMMARY = re.compile(r"^\s*<summary>.*?</summary>", re.S)
_MESSAGE_FIELDS = ("id", "parentId", "childrenIds", "role", "content", "timestamp", "model")


def import_open_webui(data: object, skips: Skips | None = None) -> list[TreeThread]:
    """Threads from a parsed Open WebUI export (an array of chats, or one chat)."""
    return import_each(data, _chat, skips)


def _chat(value: object, path: str, problems: Problems, skips: Skips) -> TreeThread | None:
    item = problems.obj(value, path)
    if item is None:
        return None
    chat = problems.obj(item.get("chat"), f"{path}.chat")
    if chat is None:
        return None
    history = chat.get("history")
    raw: dict[str, tuple[str, JsonObject]] = {}
    parents: dict[str, str | None] = {}
    current: JsonValue = None
    if isinstance(history, dict) and isinstance(history.get("messages"), dict):
        current = history.get("currentId")
        for key, node in history["messages"].items():
            where = f"{path}.chat.history.messages.{key}"
            message = problems.obj(node, where)
            if message is None:
                continue
            parent = message.get("parentId")
            if parent is not None and not isinstance(parent, str):
                problems.add(f"{where}.parentId", "expected a string or null")
                continue
            raw[key] = (where, message)
            parents[key] = parent
    else:
        previous: str | None = None
        listed = problems.array(chat.get("messages"), f"{path}.chat.messages") or []
        for index, node in enumerate(listed):
            where = f"{path}.chat.messages[{index}]"
            message = problems.obj(node, where)
            if message is None:
                continue
            key = nonempty(message.get("id")) or f"m{index}"
            raw[key] = (where, message)
            parents[key] = previous
            previous = key
    messages = placed_messages(
        raw,
        parents,
        skips,
        lambda key, where, message, parent: _message(message, key, parent, where, skips),
    )
    ids = {m["id"] for m in messages}
    title = item.get("title") if isinstance(item.get("title"), str) else chat.get("title")
    extra = {k: copy.deepcopy(v) for k, v in item.items() if k not in ("chat", "title")}
    extra["chat"] = {
        k: copy.deepcopy(v) for k, v in chat.items() if k not in ("history", "messages", "title")
    }
    chat_id = item.get("id")
    return TreeThread(
        title=title if isinstance(title, str) else "",
        messages=messages,
        active_leaf=current
        if isinstance(current, str) and current in ids
        else newest_leaf(messages),
        metadata={"extra": {"open_webui": extra}},
        id=chat_id if isinstance(chat_id, str) else None,
        created_at=iso_time(item.get("created_at")),
        updated_at=iso_time(item.get("updated_at")),
    )


def _message(
    raw: JsonObject, key: str, parent: str | None, where: str, skips: Skips
) -> JsonObject | None:
    role = raw.get("role")
    if role not in _ROLES:
        skips.add(where, "message", f"role {role!r} is not user, assistant or system")
        return None
    content = raw.get("content")
    output = raw.get("output")
    extra = {k: copy.deepcopy(v) for k, v in raw.items() if k not in _MESSAGE_FIELDS}
    if isinstance(output, list) and output:
        parts = _output_parts(output, key, where, skips)
        extra["content"] = content
    elif isinstance(content, str):
        parts = _content_parts(content, key)
        if any(part["type"] != "text" for part in parts):
            extra["content"] = content
    else:
        parts = []
        if content is not None:
            skips.add(f"{where}.content", "content", "not text: kept in metadata only")
            extra["content"] = copy.deepcopy(content)
    parts.extend(file_parts(raw.get("files"), f"{where}.files", skips, "Open WebUI", _file))
    error = raw.get("error")
    if error:
        detail = error.get("content") if isinstance(error, dict) else error
        skips.count("labelled")
        parts.append(labelled("error", detail if isinstance(detail, str) else json.dumps(detail)))
    metadata: JsonObject = {"extra": {"open_webui": extra}} if extra else {}
    if isinstance(raw.get("model"), str) and raw["model"]:
        metadata["model"] = raw["model"]
    return make_message(key, parent, str(role), parts, iso_time(raw.get("timestamp")), metadata)


def _content_parts(content: str, key: str) -> list[JsonObject]:
    """Parts from a content string, reading the `<details>` blocks Open WebUI embeds."""
    parts: list[JsonObject] = []
    position = 0
    for index, match in enumerate(_DETAILS.finditer(content)):
        _text(parts, content[position : match.start()])
        position = match.end()
        kind = match.group("type")
        attrs = {name: html.unescape(value) for name, value in _ATTR.findall(match["attrs"])}
        body = html.unescape(_SUMMARY.sub("", match.group("body"))).strip()
        if kind == "reasoning":
            lines = [re.sub(r"^>\s?", "", line) for line in body.splitlines()]
            parts.append({"type": "reasoning", "text": "\n".join(lines).strip()})
        elif kind in ("tool_calls", "code_interpreter"):
            call_id = attrs.get("id") or f"{key}:{index}"
            tool_input: JsonValue
            if kind == "code_interpreter":
                name, tool_input = "code_interpreter", {"code": body, "language": attrs.get("lang")}
                result: JsonValue = _json_value(attrs["output"]) if attrs.get("output") else None
            else:
                name = attrs.get("name") or "tool"
                tool_input = _json_value(attrs.get("arguments", ""))
                result = _json_value(attrs["result"]) if "result" in attrs else _json_value(body)
            parts.append(tool_call_part(call_id, name, tool_input))
            if attrs.get("done") != "false" and result not in (None, ""):
                parts.append(tool_result_part(call_id, name, result))
        else:
            _text(parts, match.group(0))
    _text(parts, content[position:])
    return parts


def _output_parts(output: JsonArray, key: str, where: str, skips: Skips) -> list[JsonObject]:
    parts: list[JsonObject] = []
    names: dict[str, str] = {}
    for index, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            continue
        if kind == "reasoning":
            text = _item_text(item.get("content")) or _item_text(item.get("summary"))
            parts.append({"type": "reasoning", "text": text})
        elif kind == "message":
            text = _item_text(item.get("content"))
            if text:
                parts.append({"type": "text", "text": text})
        elif kind == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or f"{key}:{index}")
            name = str(item.get("name") or "tool")
            names[call_id] = name
            parts.append(tool_call_part(call_id, name, _json_value(item.get("arguments"))))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id") or f"{key}:{index}")
            value = item.get("output")
            result = _item_text(value) if isinstance(value, list) else value
            parts.append(tool_result_part(call_id, names.get(call_id, "tool"), result))
        else:
            skips.add(f"{where}.output[{index}]", f"{kind} item", "kept as a label")
            skips.count("labelled")
            parts.append(labelled(f"Open WebUI {kind} item"))
    return parts


def _file(item: JsonObject) -> JsonObject | str:
    """An attached file's part when the export links or holds it, else its label."""
    url = nonempty(item.get("url")) or ""
    inner = object_of(item.get("file"))
    name = nonempty(item.get("name")) or nonempty(inner.get("filename"))
    content = object_of(inner.get("data")).get("content")
    if url.startswith("data:"):
        mime = url[5:].split(";", 1)[0].split(",", 1)[0] or "application/octet-stream"
        return file_part(mime, url, name)
    if url.startswith(("http://", "https://")):
        kind = "image/*" if item.get("type") == "image" else "application/octet-stream"
        return file_part(kind, url, name)
    if isinstance(content, str):
        encoded = base64.b64encode(content.encode("utf-8")).decode("ascii")
        return file_part("text/plain", f"data:text/plain;base64,{encoded}", name)
    return name or url or "unnamed"


def _text(parts: list[JsonObject], text: str) -> None:
    if text.strip():
        parts.append({"type": "text", "text": text.strip("\n")})


def _item_text(value: JsonValue) -> str:
    """The text of Responses-style content items (`[{type: output_text, text}]`) or a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
            elif isinstance(item, str):
                texts.append(item)
        return "\n\n".join(texts)
    return ""


def _json_value(text: JsonValue) -> JsonValue:
    """A JSON value written as text (Open WebUI sometimes encodes it twice), else the text."""
    value = text
    for _ in range(2):
        if not isinstance(value, str) or not value.strip():
            break
        try:
            value = json.loads(value)
        except ValueError:
            break
    return value
