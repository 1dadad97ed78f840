"""Claude.ai data export (`conversations.json`, alone or in the export's zip), import only.

A conversation is `{uuid, name, created_at, updated_at, chat_messages: [...]}`; a message
`{uuid, sender: human|assistant, text, content: [...], attachments, files, created_at,
parent_message_uuid?}`. Newer exports link messages by `parent_message_uuid` (the root's
parent is the zero UUID), so edits and retries are sibling branches; older ones are one
chain in list order. The active leaf is `current_leaf_message_uuid` when the conversation
has it, else the newest leaf, as Claude.ai opens it.

Content blocks: `text` → text, `thinking` → reasoning, `tool_use` → tool call, `tool_result`
→ tool result (Claude.ai runs its tools itself, so both stay in the assistant message that
made them), `voice_note` → text. Pasted attachments (`extracted_content`) become text files
(data URLs); uploaded `files` carry no bytes in the export, so each becomes a labelled part
and a report entry. Anything else is kept as a labelled part, its raw block in
`metadata.extra.claude_ai`.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from typing import BinaryIO

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    as_str,
    nonempty,
)

from .document import (
    TreeThread,
    answer_part,
    file_part,
    make_message,
    tool_call_part,
)
from .sources import (
    Prefixed,
    Skips,
    iso_time,
    labelled,
    new_key,
    newest_leaf,
    placed_messages,
    read_whole,
    skip_blank,
    stream_items,
)
from .validation import Problems

ZERO_UUIDS = ("00000000-0000-4000-8000-000000000000", "00000000-0000-0000-0000-000000000000")
_SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}
_CONVERSATION_FIELDS = ("uuid", "name", "created_at", "updated_at", "chat_messages")
# The attachments' text becomes their file parts: extra keeps everything else.
_MESSAGE_FIELDS = (
    "uuid",
    "sender",
    "text",
    "content",
    "created_at",
    "parent_message_uuid",
    "attachments",
)


def import_claude_ai(data: object, skips: Skips | None = None) -> list[TreeThread]:
    """Threads from a parsed Claude.ai conversations.json (a list, or one conversation)."""
    log = skips if skips is not None else Skips()
    problems = Problems()
    items: JsonArray
    if isinstance(data, dict) and "chat_messages" in data:
        items, base = [data], "$"
    elif isinstance(data, dict) and isinstance(data.get("conversations"), list):
        items, base = data["conversations"], "$.conversations"
    else:
        items, base = problems.array(data, "$") or [], "$"
    threads = []
    for index, item in enumerate(items):
        where = base if base == "$" and isinstance(data, dict) else f"{base}[{index}]"
        thread = conversation(item, where, problems, log)
        if thread is not None:
            threads.append(thread)
    problems.raise_if_any()
    return threads


def iter_claude_ai(
    fp: BinaryIO, skips: Skips | None = None, source: str = "conversations.json"
) -> Iterator[TreeThread]:
    """Threads from a conversations.json array, read one conversation at a time (any other
    document is read whole)."""
    log = skips if skips is not None else Skips()
    first = skip_blank(fp)
    if not first:
        return
    if first != b"[":
        yield from import_claude_ai(read_whole(first, fp), log)
        return
    yield from stream_items(
        Prefixed(first, fp),
        "item",
        "$",
        lambda item, where, problems: conversation(item, where, problems, log, source),
    )


def conversation(
    value: object,
    path: str,
    problems: Problems,
    skips: Skips,
    source: str = "conversations.json",
) -> TreeThread | None:
    """One conversation as a thread, or None (with problems) when it cannot be read."""
    item = problems.obj(value, path)
    if item is None:
        return None
    raw_messages = problems.array(item.get("chat_messages"), f"{path}.chat_messages")
    if raw_messages is None:
        return None
    linked = any(isinstance(m, dict) and "parent_message_uuid" in m for m in raw_messages)
    by_key: dict[str, tuple[str, JsonObject]] = {}
    previous: str | None = None
    parents: dict[str, str | None] = {}
    for index, raw in enumerate(raw_messages):
        where = f"{path}.chat_messages[{index}]"
        message = problems.obj(raw, where)
        if message is None:
            continue
        key = new_key(message, "uuid", where, by_key, problems, "uuid")
        if key is None:
            continue
        by_key[key] = (where, message)
        parent = message.get("parent_message_uuid") if linked else previous
        parents[key] = parent if isinstance(parent, str) and parent not in ZERO_UUIDS else None
        previous = key
    model = as_str(item.get("model"))
    messages = placed_messages(
        by_key,
        parents,
        skips,
        lambda key, where, raw, parent: _message(
            raw, key, parent, where, problems, skips, source, model
        ),
        label=f"{source} ",
    )
    leaf = item.get("current_leaf_message_uuid")
    ids = {m["id"] for m in messages}
    title = item.get("name")
    extra = {k: copy.deepcopy(v) for k, v in item.items() if k not in _CONVERSATION_FIELDS}
    conv_id = item.get("uuid")
    return TreeThread(
        title=title if isinstance(title, str) else "",
        messages=messages,
        active_leaf=leaf if isinstance(leaf, str) and leaf in ids else newest_leaf(messages),
        metadata={"extra": {"claude_ai": extra}} if extra else {},
        id=conv_id if isinstance(conv_id, str) else None,
        created_at=iso_time(item.get("created_at")),
        updated_at=iso_time(item.get("updated_at")),
    )


def _message(
    raw: JsonObject,
    key: str,
    parent: str | None,
    path: str,
    problems: Problems,
    skips: Skips,
    source: str,
    model: str | None,
) -> JsonObject | None:
    sender = raw.get("sender")
    role = _SENDERS.get(sender) if isinstance(sender, str) else None
    if role is None:
        skips.add(
            f"{source} {path}", "message", f"sender {sender!r} is neither human nor assistant"
        )
        return None
    where = f"{source} {path}"
    content = raw.get("content")
    parts: list[JsonObject] = []
    extra: JsonObject = {k: copy.deepcopy(v) for k, v in raw.items() if k not in _MESSAGE_FIELDS}
    if isinstance(content, list) and content:
        parts = _blocks(content, key, f"{path}.content", where, skips, extra)
    elif "content" in raw and content is not None and not isinstance(content, list):
        problems.add(f"{path}.content", "expected an array of content blocks")
        return None
    text = raw.get("text")
    if not parts and isinstance(text, str) and text:
        parts = [{"type": "text", "text": text}]
    parts.extend(_attachments(raw, f"{path}", where, skips))
    metadata: JsonObject = {}
    if role == "assistant" and model:
        metadata["model"] = model
    if extra:
        metadata["extra"] = {"claude_ai": extra}
    return make_message(key, parent, role, parts, iso_time(raw.get("created_at")), metadata)


def _blocks(
    blocks: JsonArray,
    key: str,
    path: str,
    where: str,
    skips: Skips,
    extra: JsonObject,
) -> list[JsonObject]:
    parts: list[JsonObject] = []
    open_calls: list[JsonObject] = []
    kept: JsonArray = []
    for index, block in enumerate(blocks):
        block_type = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict):
            skips.add(f"{where}.content[{index}]", "content block", "not an object")
            continue
        if block_type == "text":
            if isinstance(block.get("text"), str) and block["text"]:
                parts.append({"type": "text", "text": block["text"]})
            if block.get("citations"):
                kept.append(block)
        elif block_type == "thinking":
            thinking = block.get("thinking")
            parts.append(
                {"type": "reasoning", "text": thinking if isinstance(thinking, str) else ""}
            )
            kept.append(block)
        elif block_type == "tool_use":
            call_id = block.get("id") if isinstance(block.get("id"), str) and block["id"] else None
            name = (
                block.get("name") if isinstance(block.get("name"), str) and block["name"] else None
            )
            call = tool_call_part(call_id or f"{key}:{index}", name or "tool", block.get("input"))
            parts.append(call)
            open_calls.append(call)
            kept.append(block)
        elif block_type == "tool_result":
            parts.append(_tool_result(block, open_calls, f"{key}:{index}"))
            kept.append(block)
        elif block_type == "voice_note":
            title = nonempty(block.get("title")) or "voice note"
            body = nonempty(block.get("text"))
            skips.count("labelled")
            parts.append(labelled(title, body))
        else:
            skips.add(
                f"{where}.content[{index}]",
                f"{block_type} block",
                "no part type holds it: kept as a label",
            )
            skips.count("labelled")
            parts.append(labelled(f"Claude.ai {block_type} block"))
            kept.append(block)
    if kept:
        extra["content"] = copy.deepcopy(kept)
    return parts


def _tool_result(block: JsonObject, open_calls: list[JsonObject], fallback_id: str) -> JsonObject:
    """A tool result joined to its call: by tool_use_id, else the last open call of its name."""
    name = as_str(block.get("name"))
    call_id = as_str(block.get("tool_use_id"))
    call = next((c for c in open_calls if c["toolCallId"] == call_id), None) if call_id else None
    if call is None and call_id is None:
        call = next((c for c in reversed(open_calls) if name in (None, c["toolName"])), None)
    if call is not None:
        open_calls.remove(call)
    content = block.get("content")
    output: JsonValue = content
    if isinstance(content, list) and all(
        isinstance(item, dict) and item.get("type") == "text" for item in content
    ):
        output = "\n\n".join(str(item.get("text") or "") for item in content)
    return answer_part(
        call,
        call_id or fallback_id,
        name or "tool",
        output,
        is_error=block.get("is_error") is True,
    )


def _attachments(raw: JsonObject, path: str, where: str, skips: Skips) -> list[JsonObject]:
    parts: list[JsonObject] = []
    attachments = raw.get("attachments")
    for index, attachment in enumerate(attachments if isinstance(attachments, list) else []):
        if not isinstance(attachment, dict):
            continue
        name = as_str(attachment.get("file_name"))
        text = attachment.get("extracted_content")
        if isinstance(text, str):
            encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
            parts.append(file_part("text/plain", f"data:text/plain;base64,{encoded}", name))
        else:
            skips.add(f"{where}.attachments[{index}]", f"attachment {name}", "no extracted text")
            skips.count("labelled")
            parts.append(labelled(f"attachment not in the export: {name or 'unnamed'}"))
    seen: set[str] = set()
    for field in ("files", "files_v2"):
        files = raw.get(field)
        for index, item in enumerate(files if isinstance(files, list) else []):
            if not isinstance(item, dict):
                continue
            name = nonempty(item.get("file_name")) or "unnamed"
            ident = nonempty(item.get("file_uuid")) or name
            if ident in seen:
                continue
            seen.add(ident)
            skips.add(
                f"{where}.{field}[{index}]",
                f"file {name}",
                "Claude.ai exports do not include uploaded files: kept as a label",
            )
            skips.count("labelled")
            parts.append(labelled(f"file not in the export: {name}"))
    return parts
