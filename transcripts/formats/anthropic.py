"""Anthropic Messages API request body `{"system"?, "messages": [...]}`.

Thinking and redacted thinking blocks travel through `metadata.extra.claude.thinking_blocks`
(each reasoning part also keeps its signature). Export merges consecutive same-role turns
(a tool message becomes a user turn of `tool_result` blocks), so a round trip joins
consecutive user or assistant messages into one and gathers system messages into the one
top-level `system`. Also lost on export: message ids, timestamps, metadata, the names of
images, file parts in assistant messages, non-object tool inputs (wrapped as
`{"input": value}`), and the JSON type of tool outputs (sent as text). Other top-level keys
of an imported body (model, max_tokens, tools, …) stay in the thread's
`metadata.extra.anthropic` and come back on export.
"""

from __future__ import annotations

import copy
from typing import Any

from .document import (
    TreeThread,
    active_path,
    data_url,
    extra_of,
    file_part,
    linear_thread,
    make_message,
    output_text,
    parse_data_url,
    set_extra,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems

_DOCUMENT_TYPES = ("application/pdf", "text/plain")


def export_anthropic(thread: TreeThread) -> dict[str, Any]:
    """The active path as a Messages API request body."""
    body: dict[str, Any] = dict(thread.metadata.get("extra", {}).get("anthropic", {}))
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in active_path(thread):
        if message["role"] == "system":
            system.extend(part["text"] for part in message["parts"] if part["type"] == "text")
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = _export_blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        # The API wants tool results first in a user turn.
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = turns
    return body


def _export_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    stored = extra_of(message, "claude").get("thinking_blocks")
    if isinstance(stored, list) and stored:
        blocks.extend(copy.deepcopy(stored))
    for part in message["parts"]:
        part_type = part["type"]
        if part_type == "reasoning":
            if not stored:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": part["text"],
                        "signature": part.get("signature", ""),
                    }
                )
        elif part_type == "text":
            blocks.append({"type": "text", "text": part["text"]})
        elif part_type == "tool-call":
            value = part["input"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part["toolCallId"],
                    "name": part["toolName"],
                    "input": value if isinstance(value, dict) else {"input": value},
                }
            )
        elif part_type == "tool-result":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part["toolCallId"],
                "content": output_text(part["output"]),
            }
            if part["isError"]:
                block["is_error"] = True
            blocks.append(block)
        elif part_type == "file" and message["role"] != "assistant":
            blocks.append(_file_block(part))
    return blocks


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    mime, url = part["mimeType"], part["url"]
    inline = parse_data_url(url)
    source: dict[str, Any] = (
        {"type": "base64", "media_type": mime, "data": inline[1]}
        if inline is not None
        else {"type": "url", "url": url}
    )
    if mime.startswith("image/"):
        return {"type": "image", "source": source}
    if mime in _DOCUMENT_TYPES:
        block = {"type": "document", "source": source}
        if "name" in part:
            block["title"] = part["name"]
        return block
    label = part.get("name", url if inline is None else mime)
    return {"type": "text", "text": f"[{label}]({url})"}


def import_anthropic(data: Any) -> list[TreeThread]:
    """One linear thread from a Messages API request body (or a bare messages list)."""
    problems = Problems()
    if isinstance(data, list):
        body: dict[str, Any] = {"messages": data}
        base = "$"
    else:
        parsed = problems.obj(data, "$")
        # An empty object is no request body either: `messages` is required.
        body = parsed if parsed is not None else {"messages": []}
        base = "$.messages"
    turns = problems.array(body.get("messages"), base) or []
    messages: list[dict[str, Any]] = []
    tool_names: dict[str, str] = {}
    system = body.get("system")
    if system is not None:
        parts = _text_blocks(system, "$.system", problems)
        messages.append(make_message("m0", None, "system", parts))
    for path, turn in problems.objects(turns, base):
        role = turn.get("role")
        if role not in ("user", "assistant"):
            problems.add(f"{path}.role", "expected user or assistant")
            continue
        content = turn.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = problems.array(content, f"{path}.content") or []
        if role == "assistant":
            messages.append(_assistant(blocks, path, problems, tool_names, f"m{len(messages)}"))
        else:
            messages.extend(_user(blocks, path, problems, tool_names, len(messages)))
    problems.raise_if_any()
    extra = {key: value for key, value in body.items() if key not in ("messages", "system")}
    return [linear_thread(messages, metadata={"extra": {"anthropic": extra}} if extra else {})]


def _assistant(
    blocks: list[Any],
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    key: str,
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    for bpath, block in problems.objects(blocks, f"{path}.content"):
        block_type = block.get("type")
        if block_type == "thinking":
            text = problems.req_string(block, "thinking", bpath)
            signature = problems.opt_string(block.get("signature"), f"{bpath}.signature")
            if text is not None:
                part: dict[str, Any] = {"type": "reasoning", "text": text}
                if signature:
                    part["signature"] = signature
                parts.append(part)
                thinking.append(copy.deepcopy(block))
        elif block_type == "redacted_thinking":
            if problems.req_string(block, "data", bpath) is not None:
                thinking.append(copy.deepcopy(block))
        elif block_type in ("tool_use", "server_tool_use"):
            call_id = problems.req_string(block, "id", bpath)
            name = problems.req_string(block, "name", bpath)
            if call_id is not None and name is not None:
                tool_names[call_id] = name
                parts.append(tool_call_part(call_id, name, copy.deepcopy(block.get("input"))))
        else:
            part_or_none = _common_block(block, bpath, problems)
            if part_or_none is not None:
                parts.append(part_or_none)
    metadata: dict[str, Any] = {}
    # Kept verbatim: Claude wants thinking blocks sent back unchanged, redacted ones included.
    if thinking:
        set_extra(metadata, "claude", {"thinking_blocks": thinking})
    return make_message(key, None, "assistant", parts, metadata=metadata)


def _user(
    blocks: list[Any],
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    start: int,
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for bpath, block in problems.objects(blocks, f"{path}.content"):
        if block.get("type") == "tool_result":
            call_id = problems.req_string(block, "tool_use_id", bpath)
            if call_id is None:
                continue
            content = block.get("content", "")
            output: Any = content
            if isinstance(content, list):
                texts = [b.get("text") for b in content if isinstance(b, dict)]
                if texts and len(texts) == len(content):
                    strings = [text for text in texts if isinstance(text, str)]
                    output = "".join(strings) if len(strings) == len(texts) else content
            name = tool_names.get(call_id, "")
            is_error = block.get("is_error") is True
            results.append(
                tool_result_part(call_id, name, copy.deepcopy(output), is_error=is_error)
            )
            continue
        part = _common_block(block, bpath, problems)
        if part is not None:
            parts.append(part)
    out: list[dict[str, Any]] = []
    if results:
        out.append(make_message(f"m{start}", None, "tool", results))
    if parts or not results:
        out.append(make_message(f"m{start + len(out)}", None, "user", parts))
    return out


def _common_block(block: dict[str, Any], path: str, problems: Problems) -> dict[str, Any] | None:
    block_type = block.get("type")
    if block_type == "text":
        text = problems.req_string(block, "text", path)
        return None if text is None else {"type": "text", "text": text}
    if block_type in ("image", "document"):
        source = problems.obj(block.get("source"), f"{path}.source")
        if source is None:
            return None
        spath = f"{path}.source"
        part: dict[str, Any] | None = None
        if source.get("type") == "base64":
            mime = problems.req_string(source, "media_type", spath)
            data = problems.req_string(source, "data", spath)
            if mime is not None and data is not None:
                part = file_part(mime, data_url(mime, data), block.get("title"))
        elif source.get("type") == "url":
            url = problems.req_string(source, "url", spath)
            if url is not None:
                default = "image/*" if block_type == "image" else "application/pdf"
                part = file_part(default, url, block.get("title"))
        elif source.get("type") == "text":
            data = problems.req_string(source, "data", spath)
            if data is not None:
                part = {"type": "text", "text": data}
        else:
            problems.add(f"{spath}.type", "expected base64, url or text")
        return part
    if block_type in ("tool_result", "tool_use", "thinking", "redacted_thinking"):
        problems.add(f"{path}.type", f"{block_type} is not allowed in this turn")
        return None
    if not isinstance(block_type, str):
        problems.add(f"{path}.type", "expected a string")
    # Other block types (search results, citations, …) have no canonical part: skip them.
    return None


def _text_blocks(value: Any, path: str, problems: Problems) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    blocks = problems.array(value, path) or []
    parts = []
    for where, block in problems.objects(blocks, path):
        text = problems.req_string(block, "text", where)
        if text is not None:
            parts.append({"type": "text", "text": text})
    return parts
