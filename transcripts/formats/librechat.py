"""LibreChat conversation export (Export → JSON), import only.

`{conversationId, title, endpoint, branches, recursive, options, messages | messagesTree}`:
with `recursive: true` each message nests its replies in `children` (newer versions put the
tree under `messagesTree`); otherwise `messages` is a flat list linked by `parentMessageId`
(the root's parent is the zero UUID; several roots mean the first turn was edited). A message
is `{messageId, parentMessageId, sender, isCreatedByUser, text, content?, model, createdAt,
finish_reason?, error?, unfinished?, files?}`.

LibreChat has no active-leaf marker: it opens a conversation on the newest message of each
set of siblings, so the active leaf is found the same way. Agent `content` parts map to
canonical parts: `text` → text, `think` → reasoning, `tool_call` → a tool call and (when it
has an output) its result, `image_url` → a file; others become labelled parts. Files kept on
the LibreChat server are labelled parts and report entries.
"""

from __future__ import annotations

import copy

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    as_str,
    nonempty,
    object_of,
    text_of,
)

from .document import (
    TreeThread,
    file_part,
    make_message,
    parse_json_text,
    tool_call_part,
    tool_result_part,
)
from .sources import (
    Skips,
    file_parts,
    import_each,
    iso_time,
    labelled,
    new_key,
    placed_messages,
)
from .validation import Problems

NO_PARENT = "00000000-0000-0000-0000-000000000000"
_CONVERSATION_FIELDS = ("conversationId", "title", "messages", "messagesTree")
_MESSAGE_FIELDS = (
    "messageId",
    "parentMessageId",
    "text",
    "content",
    "children",
    "createdAt",
    "model",
    "isCreatedByUser",
)


def import_librechat(data: object, skips: Skips | None = None) -> list[TreeThread]:
    """Threads from a parsed LibreChat export (one conversation, or an array of them)."""
    return import_each(data, _conversation, skips)


def _conversation(value: object, path: str, problems: Problems, skips: Skips) -> TreeThread | None:
    item = problems.obj(value, path)
    if item is None:
        return None
    field = "messagesTree" if isinstance(item.get("messagesTree"), list) else "messages"
    listed = problems.array(item.get(field), f"{path}.{field}")
    if listed is None:
        return None
    raw: dict[str, tuple[str, JsonObject]] = {}
    parents: dict[str, str | None] = {}
    _flatten(listed, None, f"{path}.{field}", raw, parents, problems)
    options = object_of(item.get("options"))
    default_model = as_str(options.get("model"))
    messages = placed_messages(
        raw,
        parents,
        skips,
        lambda key, where, message, parent: _message(
            message, key, parent, where, skips, default_model
        ),
    )
    extra = {k: copy.deepcopy(v) for k, v in item.items() if k not in _CONVERSATION_FIELDS}
    conv_id = item.get("conversationId")
    title = item.get("title")
    times = [time for m in messages if (time := as_str(m["createdAt"]))]
    return TreeThread(
        title=title if isinstance(title, str) else "",
        messages=messages,
        active_leaf=_shown_leaf(messages),
        metadata={"extra": {"librechat": extra}} if extra else {},
        id=conv_id if isinstance(conv_id, str) else None,
        created_at=min(times) if times else None,
        updated_at=max(times) if times else None,
    )


def _flatten(
    listed: JsonArray,
    parent: str | None,
    path: str,
    raw: dict[str, tuple[str, JsonObject]],
    parents: dict[str, str | None],
    problems: Problems,
) -> None:
    """Every message of a flat list or a `children` tree, with its parent."""
    stack = [(listed, parent, path)]
    while stack:
        items, nested_parent, base = stack.pop()
        for index, node in enumerate(items):
            where = f"{base}[{index}]"
            message = problems.obj(node, where)
            if message is None:
                continue
            key = new_key(message, "messageId", where, raw, problems)
            if key is None:
                continue
            declared = message.get("parentMessageId")
            if nested_parent is not None:
                declared = nested_parent
            raw[key] = (where, message)
            parents[key] = declared if isinstance(declared, str) and declared != NO_PARENT else None
            children = message.get("children")
            if isinstance(children, list) and children:
                stack.append((children, key, f"{where}.children"))


def _shown_leaf(messages: list[JsonObject]) -> str | None:
    """The leaf LibreChat opens: from the newest root, always the newest child."""
    # Per parent: (created at, list position, id) of each child; the newest is the largest.
    children: dict[str | None, list[tuple[str, int, str]]] = {}
    for index, message in enumerate(messages):
        child = (text_of(message["createdAt"]), index, text_of(message["id"]))
        children.setdefault(as_str(message["parentMessageId"]), []).append(child)
    current: str | None = None
    while children.get(current):
        current = max(children[current])[2]
    return current


def _message(
    raw: JsonObject,
    key: str,
    parent: str | None,
    where: str,
    skips: Skips,
    default_model: str | None,
) -> JsonObject:
    role = "user" if raw.get("isCreatedByUser") is True else "assistant"
    content = raw.get("content")
    parts: list[JsonObject] = []
    if isinstance(content, list) and content:
        parts = _content_parts(content, key, f"{where}.content", skips)
    text = raw.get("text")
    if not parts and isinstance(text, str) and text:
        parts = [{"type": "text", "text": text}]
    parts.extend(file_parts(raw.get("files"), f"{where}.files", skips, "LibreChat", _file))
    extra = {k: copy.deepcopy(v) for k, v in raw.items() if k not in _MESSAGE_FIELDS}
    if isinstance(content, list) and content:
        extra["content"] = copy.deepcopy(content)
    metadata: JsonObject = {}
    model = as_str(raw.get("model"))
    if role == "assistant" and (model or default_model):
        metadata["model"] = model or default_model
    if isinstance(raw.get("finish_reason"), str):
        metadata["finishReason"] = raw["finish_reason"]
    if extra:
        metadata["extra"] = {"librechat": extra}
    return make_message(key, parent, role, parts, iso_time(raw.get("createdAt")), metadata)


def _value(part: JsonObject, key: str) -> JsonValue:
    """A content part's value: LibreChat writes `{type, text: "..."}` or `{text: {value}}`."""
    value = part.get(key)
    if isinstance(value, dict) and "value" in value:
        inner: JsonValue = value["value"]
        return inner
    return value


def _content_parts(content: JsonArray, key: str, where: str, skips: Skips) -> list[JsonObject]:
    parts: list[JsonObject] = []
    for index, part in enumerate(content):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = _value(part, "text")
            if isinstance(text, str) and text:
                parts.append({"type": "text", "text": text})
        elif kind == "think":
            think = _value(part, "think")
            parts.append({"type": "reasoning", "text": think if isinstance(think, str) else ""})
        elif kind == "tool_call" and isinstance(part.get("tool_call"), dict):
            parts.extend(_tool_call(part["tool_call"], f"{key}:{index}"))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            url = part["image_url"].get("url")
            if isinstance(url, str) and url.startswith(("data:", "http://", "https://")):
                mime = url[5:].split(";", 1)[0] if url.startswith("data:") else "image/*"
                parts.append(file_part(mime or "image/*", url))
            else:
                skips.add(f"{where}[{index}]", "image", "kept on the LibreChat server")
                skips.count("labelled")
                parts.append(labelled(f"image not in the export: {url}"))
        elif kind == "error":
            skips.count("labelled")
            detail = _value(part, "error") or _value(part, "text")
            parts.append(labelled("error", detail if isinstance(detail, str) else None))
        else:
            skips.add(f"{where}[{index}]", f"{kind} part", "no part type holds it: kept as a label")
            skips.count("labelled")
            parts.append(labelled(f"LibreChat {kind} part"))
    return parts


def _tool_call(call: JsonObject, fallback_id: str) -> list[JsonObject]:
    """A tool call part and, when LibreChat recorded its output, the result joined to it."""
    function = object_of(call.get("function"))
    call_id = str(call.get("id") or fallback_id)
    name = str(call.get("name") or function.get("name") or call.get("type") or "tool")
    arguments = call.get("args", function.get("arguments"))
    if isinstance(arguments, str):
        arguments = parse_json_text(arguments)
    parts = [tool_call_part(call_id, name, arguments)]
    output = call.get("output", function.get("output"))
    if output is not None:
        parts.append(tool_result_part(call_id, name, output))
    return parts


def _file(item: JsonObject) -> JsonObject | str:
    """An attached file's part when the export links or holds it, else its label."""
    path = nonempty(item.get("filepath")) or ""
    name = nonempty(item.get("filename"))
    if path.startswith(("http://", "https://", "data:")):
        mime = nonempty(item.get("type"))
        return file_part(mime if mime and "/" in mime else "application/octet-stream", path, name)
    return name or path or "unnamed"
