"""ChatGPT data export (`conversations.json`), import only.

Every node of `mapping` is kept except the null-message root nodes, whose children move up
to the nearest kept ancestor; `current_node` becomes the active leaf. Messages ChatGPT's UI
does not show (system messages, messages flagged visually hidden, assistant messages
addressed to a tool, web pages, browsing displays, memory) are kept with
`metadata.hidden = true`. An assistant message addressed to a tool (`code`, Canvas `canmore.*`
with its JSON payload as input, and the like) becomes a tool call named after the recipient,
and the tool message answering it a tool result joined to that call. How each content type
becomes parts, and how asset pointers and Canvas documents are found in the export's zip, is
in `chatgpt_parts.py`. The raw content and message metadata of anything not plain stay in
`metadata.extra.chatgpt`. `iter_chatgpt` reads a file conversation by conversation, so
memory stays flat whatever its size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import BinaryIO

from transcripts.errors import FormatError
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    list_of,
    object_of,
    text_of,
)
from transcripts.message_schema import ROLES
from transcripts.times import epoch_to_iso

from .chatgpt_parts import ExportContext, canvas_document, canvas_input, content_parts
from .document import TreeThread, answer_part, make_message, tool_call_part
from .sources import Prefixed, Skips, read_whole, skip_blank, stream_items
from .validation import Problems

_HIDDEN_CONTENT = (
    "user_editable_context",
    "model_editable_context",
    "reasoning_recap",
    "sonic_webpage",
    "tether_browsing_display",
)


def import_chatgpt(
    data: object, skips: Skips | None = None, *, context: ExportContext | None = None
) -> list[TreeThread]:
    """Threads from a parsed conversations.json (a list, `{"conversations": […]}` or one)."""
    ctx = context or ExportContext(skips=skips if skips is not None else Skips())
    problems = Problems()
    base = "$"
    if isinstance(data, dict) and "conversations" in data:
        data, base = data["conversations"], "$.conversations"
    elif isinstance(data, dict) and "mapping" in data:
        single = _conversation(data, "$", problems, ctx)
        problems.raise_if_any()
        return [single] if single is not None else []
    items = problems.array(data, base) or []
    threads = []
    for index, item in enumerate(items):
        thread = _conversation(item, f"{base}[{index}]", problems, ctx)
        if thread is not None:
            threads.append(thread)
    problems.raise_if_any()
    return threads


def iter_chatgpt(
    fp: BinaryIO, skips: Skips | None = None, *, context: ExportContext | None = None
) -> Iterator[TreeThread]:
    """Threads from a conversations.json file, parsed incrementally one conversation at a time.

    An array or `{"conversations": [...]}` (that key first) streams; any other object, such
    as a single conversation, is small enough to be read whole.
    """
    ctx = context or ExportContext(skips=skips if skips is not None else Skips())
    first = skip_blank(fp)
    if not first:
        return
    if first not in (b"[", b"{"):
        raise FormatError([("$", "expected a JSON array or object of conversations")])
    prefix = first
    if first == b"{":
        head = _first_key(fp)
        prefix += head
        if not head.strip().startswith(b'"conversations"'):
            yield from import_chatgpt(read_whole(prefix, fp), context=ctx)
            return
    yield from stream_items(
        Prefixed(prefix, fp),
        "item" if first == b"[" else "conversations.item",
        "$" if first == b"[" else "$.conversations",
        lambda item, where, problems: _conversation(item, where, problems, ctx),
    )


def _first_key(fp: BinaryIO) -> bytes:
    """The bytes after an opening brace up to the end of its first key (or what there is)."""
    read = b""
    while True:
        byte = fp.read(1)
        read += byte
        if not byte or (byte == b'"' and read.strip() != b'"' and not read.endswith(b'\\"')):
            return read
        if not read.strip() and byte.isspace():
            continue
        if read.strip()[:1] != b'"':
            return read


def _time(value: JsonValue) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            return epoch_to_iso(float(value))
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _conversation(
    value: object, path: str, problems: Problems, ctx: ExportContext
) -> TreeThread | None:
    if ctx.archive is not None:
        ctx.archive.new_conversation()
    conversation = problems.obj(value, path)
    if conversation is None:
        return None
    mapping = problems.obj(conversation.get("mapping"), f"{path}.mapping")
    if mapping is None:
        return None
    title = conversation.get("title")
    conv_id = conversation.get("conversation_id", conversation.get("id"))
    nodes: dict[str, JsonObject] = {}
    for key, node_value in mapping.items():
        node = problems.obj(node_value, f"{path}.mapping.{key}")
        if node is None:
            continue
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            problems.add(f"{path}.mapping.{key}.parent", "expected a string or null")
            continue
        children = node.get("children", [])
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            problems.add(f"{path}.mapping.{key}.children", "expected an array of node ids")
            continue
        nodes[key] = node
    order = _tree_order(nodes)
    messages: list[JsonObject] = []
    kept: dict[str, str | None] = {}  # node id -> nearest kept ancestor-or-self
    calls: dict[str, JsonObject] = {}  # kept message id -> its tool-call part
    for key in order:
        node = nodes[key]
        parent = node.get("parent")
        anchor = kept.get(parent) if isinstance(parent, str) else None
        raw = node.get("message")
        if raw is None:
            kept[key] = anchor
            continue
        message = _message(
            raw, key, anchor, f"{path}.mapping.{key}.message", problems, calls, messages, ctx
        )
        if message is None:
            kept[key] = anchor
            continue
        messages.append(message)
        kept[key] = key
    current = conversation.get("current_node")
    leaf = kept.get(current) if isinstance(current, str) else None
    if leaf is None and messages:
        leaf = as_str(messages[-1]["id"])
    extra = {
        k: v
        for k, v in conversation.items()
        if k not in ("mapping", "title", "create_time", "update_time", "current_node")
    }
    return TreeThread(
        title=title if isinstance(title, str) else "",
        messages=messages,
        active_leaf=leaf,
        metadata={"extra": {"chatgpt": extra}} if extra else {},
        id=conv_id if isinstance(conv_id, str) else None,
        created_at=_time(conversation.get("create_time")),
        updated_at=_time(conversation.get("update_time")),
    )


def _tree_order(nodes: dict[str, JsonObject]) -> list[str]:
    """Node ids with parents before children, following each node's `children` order."""
    roots = [key for key, node in nodes.items() if node.get("parent") not in nodes]
    order: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        key = stack.pop()
        if key in seen or key not in nodes:
            continue
        seen.add(key)
        order.append(key)
        children = [c for c in list_of(nodes[key].get("children")) if c in nodes and c not in seen]
        # Children listed by the parent but pointing elsewhere are visited from their real parent.
        children = [c for c in children if nodes[c].get("parent") == key]
        stack.extend(reversed(children))
    # Nodes only reachable through a parent that does not list them (or a cycle) come last.
    order.extend(key for key in nodes if key not in seen)
    return order


def _message(
    value: JsonValue,
    key: str,
    parent: str | None,
    path: str,
    problems: Problems,
    calls: dict[str, JsonObject],
    messages: list[JsonObject],
    ctx: ExportContext,
) -> JsonObject | None:
    raw = problems.obj(value, path)
    if raw is None:
        return None
    author = problems.obj(raw.get("author"), f"{path}.author")
    content = problems.obj(raw.get("content"), f"{path}.content")
    if author is None or content is None:
        return None
    role = author.get("role")
    # Plugin answers of older exports come from the "function" role: they are tool output.
    role = "tool" if role == "function" else role
    if role not in ROLES:
        problems.add(f"{path}.author.role", f"expected one of {', '.join(ROLES)}")
        return None
    raw_meta = object_of(raw.get("metadata"))
    content_type = content.get("content_type")
    if not isinstance(content_type, str):
        problems.add(f"{path}.content.content_type", "expected a string")
        return None
    recipient = raw.get("recipient", "all")
    author_name = as_str(author.get("name"))
    metadata: JsonObject = {}
    extra: JsonObject = {"content_type": content_type}
    for field in ("status", "recipient", "end_turn", "weight", "channel"):
        if field in raw:
            extra[field] = raw[field]
    if author_name is not None:
        extra["author_name"] = author_name
    if raw_meta:
        # Shared with the parsed document, not copied: an import only reads either.
        extra["metadata"] = raw_meta
    if isinstance(raw_meta.get("model_slug"), str):
        metadata["model"] = raw_meta["model_slug"]
    finish = raw_meta.get("finish_details")
    if isinstance(finish, dict) and isinstance(finish.get("type"), str):
        metadata["finishReason"] = finish["type"]
    parts = content_parts(content, content_type, extra, ctx.where(path), ctx)
    hidden = (
        role == "system"
        or raw_meta.get("is_visually_hidden_from_conversation") is True
        or content_type in _HIDDEN_CONTENT
    )
    if role == "assistant" and isinstance(recipient, str) and recipient != "all":
        hidden = True
        text = content.get("text")
        code = text if isinstance(text, str) else _joined(parts)
        tool_input: JsonObject = {"code" if content_type == "code" else "text": code}
        language = content.get("language")
        if isinstance(language, str):
            tool_input["language"] = language
        canvas = canvas_input(recipient, code)
        tool_call = tool_call_part(key, recipient, canvas if canvas is not None else tool_input)
        parts = [tool_call]
        calls[key] = tool_call
    elif role == "tool":
        call = _answered_call(parent, author_name, calls, messages)
        if call is not None or content_type == "execution_output":
            text = as_str(content.get("text"))
            output = (
                text if text is not None and content_type != "sonic_webpage" else _joined(parts)
            )
            aggregate = raw_meta.get("aggregate_result")
            status = aggregate.get("status") if isinstance(aggregate, dict) else None
            result = answer_part(
                call,
                key,
                author_name or "tool",
                output,
                is_error=content_type == "system_error"
                or (isinstance(status, str) and status != "success"),
            )
            files = [part for part in parts if part["type"] == "file"]
            parts = [result, *files, *canvas_document(raw_meta, ctx.where(path), ctx)]
    if hidden:
        metadata["hidden"] = True
    metadata["extra"] = {"chatgpt": extra}
    return make_message(key, parent, role, parts, _time(raw.get("create_time")), metadata)


def _joined(parts: list[JsonObject]) -> str:
    return "\n\n".join(
        text_of(part["text"]) for part in parts if part["type"] in ("text", "reasoning")
    )


def _answered_call(
    parent: str | None,
    author_name: str | None,
    calls: dict[str, JsonObject],
    messages: list[JsonObject],
) -> JsonObject | None:
    """The tool call this tool message answers: the nearest ancestor call to the same tool."""
    by_id = {message["id"]: message for message in messages[-50:]}
    current = parent
    for _ in range(50):
        if current is None:
            return None
        call = calls.get(current)
        if call is not None:
            tool = text_of(call["toolName"])
            if (
                author_name is None
                or tool == author_name
                or (author_name.split(".")[0] == tool.split(".")[0])
            ):
                return call
            return None
        message = by_id.get(current)
        if message is None or message["role"] != "tool":
            return None
        current = as_str(message["parentMessageId"])
    return None
