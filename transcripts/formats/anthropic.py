"""Anthropic Messages API request body `{"system"?, "messages": [...]}`.

An imported body comes back exactly. A thinking block is a reasoning part with its
signature; a redacted thinking block a reasoning part without text. What a block has beyond
its canonical part (the redacted `data`, `cache_control`, a tool result's block content or
`is_error: false`, …) rides in the part's `sourceFields.anthropic`, a string content or
system prompt in `metadata.extra.anthropic`, and the body's other keys (model, max_tokens,
tools, …) in the thread's `metadata.extra.anthropic`. Consecutive turns of one role become
one turn on export (as the API merges them); what a server tool gave back
(`web_search_tool_result`, …) is a tool result in the assistant message, and other blocks
without a canonical part are skipped.

Canonical content from elsewhere loses on export: message ids, timestamps, metadata, the
names of images, file parts in assistant messages, non-object tool inputs (wrapped as
`{"input": value}`), and the JSON type of tool outputs (sent as text); system messages are
gathered into the one top-level `system`.
"""

from __future__ import annotations

import copy
from typing import Any

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    object_of,
    objects_in,
    text_of,
)

from .document import (
    TreeThread,
    active_path,
    data_url,
    extra_of,
    file_part,
    keep_source_fields,
    linear_thread,
    make_message,
    metadata_extra,
    output_text,
    parse_data_url,
    parts_of,
    restore_source_fields,
    set_extra,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems

FORMAT = "anthropic"
_DOCUMENT_TYPES = ("application/pdf", "text/plain")


def export_anthropic(thread: TreeThread) -> dict[str, Any]:
    """The active path as a Messages API request body."""
    # Any: callers (generators, tests) index the written document freely.
    body: JsonObject = dict(metadata_extra(thread.metadata, "anthropic"))
    system: list[JsonObject] = []
    system_blocks = False
    # (role, blocks, the messages the turn was made of: a turn of one message may go back
    # to a string).
    turns: list[tuple[str, list[JsonObject], list[JsonObject]]] = []
    for message in active_path(thread):
        if message["role"] == "system":
            system.extend(
                restore_source_fields(part, FORMAT, {"type": "text", "text": part["text"]})
                for part in parts_of(message)
                if part["type"] == "text"
            )
            system_blocks = system_blocks or extra_of(message, FORMAT).get("system") == "blocks"
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = _export_blocks(message)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
            turns[-1][2].append(message)
        else:
            turns.append((role, blocks, [message]))
    body_turns: list[JsonObject] = []
    for role, blocks, messages in turns:
        # The API wants tool results first in a user turn.
        blocks.sort(key=lambda block: block["type"] != "tool_result")
        content: JsonValue = blocks
        as_text = len(messages) == 1 and extra_of(messages[0], FORMAT).get("content") == "text"
        if as_text and len(blocks) == 1 and set(blocks[0]) == {"type", "text"}:
            content = blocks[0]["text"]
        body_turns.append({"role": role, "content": content})
    if system_blocks:
        body["system"] = system
    elif system:
        body["system"] = "\n\n".join(text_of(block["text"]) for block in system)
    body["messages"] = body_turns
    return body


def _export_blocks(message: JsonObject) -> list[JsonObject]:
    blocks: list[JsonObject] = []
    # Earlier imports kept a message's thinking blocks in its metadata: those are written.
    legacy = extra_of(message, "claude").get("thinking_blocks")
    if isinstance(legacy, list) and legacy:
        blocks.extend(copy.deepcopy(objects_in(legacy)))
    for part in parts_of(message):
        if legacy and part["type"] == "reasoning":
            continue
        if part["type"] == "file" and message["role"] == "assistant":
            continue
        blocks.append(restore_source_fields(part, FORMAT, _block(part)))
    return blocks


def _block(part: JsonObject) -> JsonObject:
    """The block a canonical part becomes, before the source's own fields are put back."""
    part_type = part["type"]
    if part_type == "reasoning":
        return {
            "type": "thinking",
            "thinking": part["text"],
            "signature": part.get("signature", ""),
        }
    if part_type == "text":
        return {"type": "text", "text": part["text"]}
    if part_type == "tool-call":
        value = part["input"]
        return {
            "type": "tool_use",
            "id": part["toolCallId"],
            "name": part["toolName"],
            "input": value if isinstance(value, dict) else {"input": value},
        }
    if part_type == "tool-result":
        block: JsonObject = {
            "type": "tool_result",
            "tool_use_id": part["toolCallId"],
            "content": output_text(part["output"]),
        }
        if part["isError"]:
            block["is_error"] = True
        return block
    return _file_block(part)


def _file_block(part: JsonObject) -> JsonObject:
    mime, url = text_of(part["mimeType"]), text_of(part["url"])
    inline = parse_data_url(url)
    source: JsonObject = (
        {"type": "base64", "media_type": mime, "data": inline[1]}
        if inline is not None
        else {"type": "url", "url": url}
    )
    if mime.startswith("image/"):
        return {"type": "image", "source": source}
    if mime in _DOCUMENT_TYPES:
        block: JsonObject = {"type": "document", "source": source}
        if "name" in part:
            block["title"] = part["name"]
        return block
    label = part.get("name", url if inline is None else mime)
    return {"type": "text", "text": f"[{label}]({url})"}


def import_anthropic(data: object) -> list[TreeThread]:
    """One linear thread from a Messages API request body (or a bare messages list)."""
    problems = Problems()
    if isinstance(data, list):
        body: JsonObject = {"messages": data}
        base = "$"
    else:
        parsed = problems.obj(data, "$")
        # An empty object is no request body either: `messages` is required.
        body = parsed if parsed is not None else {"messages": []}
        base = "$.messages"
    turns = problems.array(body.get("messages"), base) or []
    messages: list[JsonObject] = []
    tool_names: dict[str, str] = {}
    system = body.get("system")
    if system is not None:
        parts = _text_blocks(system, "$.system", problems)
        metadata: JsonObject = (
            {"extra": {FORMAT: {"system": "blocks"}}} if isinstance(system, list) else {}
        )
        messages.append(make_message("m0", None, "system", parts, metadata=metadata))
    for path, turn in problems.objects(turns, base):
        role = turn.get("role")
        if role not in ("user", "assistant"):
            problems.add(f"{path}.role", "expected user or assistant")
            continue
        content = turn.get("content")
        as_text = isinstance(content, str)
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = problems.array(content, f"{path}.content") or []
        if role == "assistant":
            messages.append(_assistant(blocks, path, problems, tool_names, f"m{len(messages)}"))
        else:
            messages.extend(_user(blocks, path, problems, tool_names, len(messages)))
        if as_text:
            set_extra(object_of(messages[-1]["metadata"]), FORMAT, {"content": "text"})
    problems.raise_if_any()
    extra = {key: value for key, value in body.items() if key not in ("messages", "system")}
    return [linear_thread(messages, metadata={"extra": {"anthropic": extra}} if extra else {})]


def _assistant(
    blocks: JsonArray,
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    key: str,
) -> JsonObject:
    parts: list[JsonObject] = []
    for bpath, block in problems.objects(blocks, f"{path}.content"):
        block_type = block.get("type")
        part: JsonObject | None = None
        if block_type == "thinking":
            text = problems.req_string(block, "thinking", bpath)
            signature = problems.opt_string(block.get("signature"), f"{bpath}.signature")
            if text is not None:
                part = {"type": "reasoning", "text": text}
                if signature:
                    part["signature"] = signature
        elif block_type == "redacted_thinking":
            # Encrypted reasoning: no text to show; its data rides in the part's source fields.
            if problems.req_string(block, "data", bpath) is not None:
                part = {"type": "reasoning", "text": ""}
        elif block_type in ("tool_use", "server_tool_use"):
            call_id = problems.req_string(block, "id", bpath)
            name = problems.req_string(block, "name", bpath)
            if call_id is not None and name is not None:
                tool_names[call_id] = name
                part = tool_call_part(call_id, name, copy.deepcopy(block.get("input")))
        elif isinstance(block_type, str) and block_type.endswith("_tool_result"):
            # What a server tool (web search, code execution, …) gave back, in the same turn.
            call_id = problems.req_string(block, "tool_use_id", bpath)
            if call_id is not None:
                output = copy.deepcopy(block.get("content"))
                part = tool_result_part(call_id, tool_names.get(call_id, ""), output)
        else:
            part = _common_block(block, bpath, problems)
        if part is not None:
            # Claude wants thinking blocks back unchanged: signatures and redacted data too.
            keep_source_fields(part, FORMAT, block, _block(part))
            parts.append(part)
    return make_message(key, None, "assistant", parts)


def _user(
    blocks: JsonArray,
    path: str,
    problems: Problems,
    tool_names: dict[str, str],
    start: int,
) -> list[JsonObject]:
    results: list[JsonObject] = []
    parts: list[JsonObject] = []
    for bpath, block in problems.objects(blocks, f"{path}.content"):
        if block.get("type") == "tool_result":
            call_id = problems.req_string(block, "tool_use_id", bpath)
            if call_id is None:
                continue
            content = block.get("content", "")
            output: JsonValue = content
            if isinstance(content, list):
                texts = [b.get("text") for b in content if isinstance(b, dict)]
                if texts and len(texts) == len(content):
                    strings = [text for text in texts if isinstance(text, str)]
                    output = "".join(strings) if len(strings) == len(texts) else content
            name = tool_names.get(call_id, "")
            is_error = block.get("is_error") is True
            result = tool_result_part(call_id, name, copy.deepcopy(output), is_error=is_error)
            keep_source_fields(result, FORMAT, block, _block(result))
            results.append(result)
            continue
        part = _common_block(block, bpath, problems)
        if part is not None:
            keep_source_fields(part, FORMAT, block, _block(part))
            parts.append(part)
    out: list[JsonObject] = []
    if results:
        out.append(make_message(f"m{start}", None, "tool", results))
    if parts or not results:
        out.append(make_message(f"m{start + len(out)}", None, "user", parts))
    return out


def _common_block(block: JsonObject, path: str, problems: Problems) -> JsonObject | None:
    block_type = block.get("type")
    if block_type == "text":
        text = problems.req_string(block, "text", path)
        return None if text is None else {"type": "text", "text": text}
    if block_type in ("image", "document"):
        source = problems.obj(block.get("source"), f"{path}.source")
        if source is None:
            return None
        spath = f"{path}.source"
        part: JsonObject | None = None
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


def _text_blocks(value: JsonValue, path: str, problems: Problems) -> list[JsonObject]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    blocks = problems.array(value, path) or []
    parts: list[JsonObject] = []
    for where, block in problems.objects(blocks, path):
        text = problems.req_string(block, "text", where)
        if text is not None:
            part: JsonObject = {"type": "text", "text": text}
            keep_source_fields(part, FORMAT, block, {"type": "text", "text": text})
            parts.append(part)
    return parts
