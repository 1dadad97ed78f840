"""ThreadProtocol v1.0.0: flat, sequenced actions with a multi-agent registry.

Export returns a LIST of ThreadProtocol threads: the first is the main thread (the active
path); every other leaf of the tree becomes a child thread holding the whole path from the
root to that leaf (so it validates on its own, tool calls included), linked by
`parent_thread_id` and naming its fork point in `metadata.fork_from_message_id`. Each action
carries `action_id` = `<message id>#<n>`, which import uses to rebuild message boundaries;
without it, consecutive actions of one agent form one assistant message. System messages
travel as `system.prompt` actions, and `metadata.annotations` of a message
(`[{"action_type": "system.…", "data": …}]`) as the `system.*` actions after it. Assistant
messages without an agent are attributed to an `assistant` agent added to the registry;
messages without a timestamp (or with one earlier than the message before) take the
previous one, since action times must not go back. A tool result whose call is not on the
path is written as a `system.orphan_tool_return` action. Import checks every rule of the
specification first (`threadprotocol_rules`).
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from transcripts.times import parse_iso

from .document import (
    TreeThread,
    active_path,
    file_part,
    leaves,
    linear_thread,
    make_message,
    path_to,
    tool_call_part,
    tool_result_part,
)
from .threadprotocol_rules import FINISH_REASONS, SYSTEM_ACTION, VERSION, validate_thread
from .validation import Problems, is_int

DEFAULT_AGENT = "assistant"
EPOCH = "1970-01-01T00:00:00Z"
_NAMESPACE = uuid.UUID("8d6d8f3e-3f1c-4c55-9d0e-5a7c2f0b9e11")


def export_threadprotocol(thread: TreeThread) -> list[dict[str, Any]]:
    """The main thread (active path) first, then one child thread per other branch."""
    main_id = thread.id or str(uuid.uuid5(_NAMESPACE, repr((thread.title, thread.created_at))))
    main_path = active_path(thread)
    out = [_export_path(thread, main_path, main_id, thread.parent_thread_id, {})]
    main_keys = {message["id"] for message in main_path}
    active_leaf = main_path[-1]["id"] if main_path else None
    for leaf in leaves(thread):
        if leaf == active_leaf:
            continue
        path = path_to(thread, leaf)
        shared = [message["id"] for message in path if message["id"] in main_keys]
        fork = {"fork_from_message_id": shared[-1] if shared else None, "leaf_message_id": leaf}
        child_id = str(uuid.uuid5(_NAMESPACE, f"{main_id}/{leaf}"))
        out.append(_export_path(thread, path, child_id, main_id, fork))
    return out


def _export_path(
    thread: TreeThread,
    path: list[dict[str, Any]],
    thread_id: str,
    parent_id: str | None,
    fork: dict[str, Any],
) -> dict[str, Any]:
    created = thread.created_at or next((m["createdAt"] for m in path if m["createdAt"]), EPOCH)
    agents = {key: _agent_config(key, config, created) for key, config in thread.agents.items()}
    actions: list[dict[str, Any]] = []
    clock = created
    called: set[str] = set()
    for message in path:
        clock = _later(clock, message["createdAt"])
        new = _message_actions(message, called)
        for action in new:
            agent = action.get("agent_id")
            if agent is not None and agent not in agents:
                agents[agent] = {
                    "agent_id": agent,
                    "agent_identifier": agent,
                    "agent_name": agent,
                    "created_at": created,
                }
        for n, action in enumerate(new):
            action["action_id"] = f"{message['id']}#{n}"
            action["timestamp"] = clock
            action["sequence"] = len(actions) + 1
            actions.append(action)
    result: dict[str, Any] = {
        "version": VERSION,
        "thread_id": thread_id,
        "created_at": created,
        "updated_at": thread.updated_at or clock,
        "title": thread.title,
        "metadata": {**copy.deepcopy(thread.metadata), **fork},
        "agents": agents,
        "actions": actions,
    }
    if parent_id is not None:
        result["parent_thread_id"] = parent_id
    return result


def _agent_config(key: str, config: Any, created: str) -> dict[str, Any]:
    """A registry entry with every required field, filled from the key where missing."""
    entry = copy.deepcopy(config) if isinstance(config, dict) else {}
    entry["agent_id"] = key
    for field, default in (("agent_identifier", key), ("agent_name", key), ("created_at", created)):
        if not isinstance(entry.get(field), str):
            entry[field] = default
    return entry


def _later(clock: str, stamp: str | None) -> str:
    """stamp when it is a timestamp not before clock: action times never go back."""
    if stamp is None:
        return clock
    moment, current = parse_iso(stamp), parse_iso(clock)
    if moment is None or (current is not None and moment < current):
        return clock
    return stamp


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    content: list[dict[str, Any]] = []
    for part in parts:
        if part["type"] == "text":
            content.append({"type": "text", "text": part["text"]})
        else:
            kind = part["mimeType"].split("/")[0]
            entry: dict[str, Any] = {
                "type": kind if kind in ("image", "audio", "video") else "file",
                "url": part["url"],
                "media_type": part["mimeType"],
            }
            if "name" in part:
                entry["name"] = part["name"]
            content.append(entry)
    return content


def _message_actions(message: dict[str, Any], called: set[str]) -> list[dict[str, Any]]:
    metadata = message["metadata"]
    role = message["role"]
    agent = metadata.get("agentId") or DEFAULT_AGENT
    actions: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush_content() -> None:
        if not pending:
            return
        if role == "user":
            actions.append({"action_type": "user_message", "content": _content(pending)})
        elif role == "system":
            data = {"content": _content(pending)}
            actions.append({"action_type": "system.prompt", "data": data})
        else:
            actions.append(
                {
                    "action_type": "assistant_message",
                    "agent_id": agent,
                    "content": _content(pending),
                }
            )
        pending.clear()

    for part in message["parts"]:
        part_type = part["type"]
        if part_type in ("text", "file"):
            pending.append(part)
            continue
        flush_content()
        if part_type == "reasoning":
            thinking = {
                "action_type": "thinking",
                "agent_id": agent,
                "content": part["text"],
                "provider_name": metadata.get("extra", {})
                .get("threadprotocol", {})
                .get("provider_name", "unknown"),
            }
            if "signature" in part:
                thinking["signature"] = part["signature"]
            actions.append(thinking)
        elif part_type == "tool-call":
            called.add(part["toolCallId"])
            actions.append(
                {
                    "action_type": "tool_call",
                    "agent_id": agent,
                    "tool_name": part["toolName"],
                    "tool_call_id": part["toolCallId"],
                    "args": copy.deepcopy(part["input"]),
                }
            )
        elif part_type == "tool-result" and part["toolCallId"] not in called:
            # A result whose call is not on this path would break the matching rule.
            actions.append(
                {"action_type": "system.orphan_tool_return", "data": copy.deepcopy(part)}
            )
        elif part_type == "tool-result":
            actions.append(
                {
                    "action_type": "tool_return",
                    "tool_call_id": part["toolCallId"],
                    "tool_name": part["toolName"],
                    "status": "error" if part["isError"] else "success",
                    "content": copy.deepcopy(part["output"]),
                }
            )
    flush_content()
    if not actions and role != "tool":
        # An empty message still needs an action to keep its place in the thread.
        pending.append({"type": "text", "text": ""})
        flush_content()
    for action in actions:
        if action["action_type"] == "assistant_message":
            if metadata.get("finishReason") in FINISH_REASONS:
                action["finish_reason"] = metadata["finishReason"]
            usage = metadata.get("usage")
            if isinstance(usage, dict) and is_int(usage.get("inputTokens")):
                action["usage"] = {
                    "input_tokens": usage["inputTokens"],
                    "output_tokens": usage.get("outputTokens", 0),
                }
                if is_int(usage.get("totalTokens")):
                    action["usage"]["total_tokens"] = usage["totalTokens"]
    annotations = metadata.get("annotations")
    for annotation in annotations if isinstance(annotations, list) else []:
        action_type = annotation.get("action_type") if isinstance(annotation, dict) else None
        if isinstance(action_type, str) and SYSTEM_ACTION.match(action_type):
            actions.append(
                {"action_type": annotation["action_type"], "data": annotation.get("data")}
            )
    return actions


def import_threadprotocol(data: Any) -> list[TreeThread]:
    """Threads from one ThreadProtocol thread or a list of them; every rule is checked."""
    problems = Problems()
    documents = data if isinstance(data, list) else [data]
    threads = []
    for index, document in enumerate(documents):
        path = f"$[{index}]" if isinstance(data, list) else "$"
        before = len(problems.items)
        validate_thread(document, path, problems)
        if len(problems.items) == before:
            threads.append(_read_thread(document))
    problems.raise_if_any()
    return threads


def _read_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for item in content:
        if item["type"] == "text":
            parts.append({"type": "text", "text": item["text"]})
            continue
        mime = item.get("media_type")
        mime = mime if isinstance(mime, str) else f"{item['type']}/*"
        url = item.get("url") or item.get("image_url")
        if not isinstance(url, str):
            data = item.get("image_base64") or item.get("data")
            url = f"data:{mime};base64,{data}" if isinstance(data, str) else ""
        parts.append(file_part(mime, url, item.get("name")))
    return parts


def _system_parts(content: Any) -> list[dict[str, Any]]:
    """Text parts of a system.prompt action, whose data no rule constrains."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(
        isinstance(item, dict) and isinstance(item.get("text"), str) for item in content
    ):
        return [{"type": "text", "text": item["text"]} for item in content]
    return [{"type": "text", "text": json.dumps(content, ensure_ascii=False)}]


def _read_thread(thread: dict[str, Any]) -> TreeThread:
    """A validated ThreadProtocol thread as a linear TreeThread."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    current_source: str | None = None
    annotations: list[dict[str, Any]] = []
    for action in thread["actions"]:
        action_type = action["action_type"]
        action_id = action.get("action_id")
        source = (
            action_id.rsplit("#", 1)[0] if isinstance(action_id, str) and "#" in action_id else None
        )
        if action_type.startswith("system.") and action_type != "system.prompt":
            annotation = {"action_type": action_type, "data": copy.deepcopy(action["data"])}
            if messages:
                messages[-1]["metadata"].setdefault("annotations", []).append(annotation)
            else:
                annotations.append(annotation)
            continue
        role, agent = _role_of(action)
        continues = (
            current is not None
            and current["role"] == role
            and current["metadata"].get("agentId") == agent
            and (source == current_source if source or current_source else role != "user")
        )
        if not continues:
            key = source or f"m{len(messages)}"
            metadata = {"agentId": agent} if agent else {}
            current = make_message(key, None, role, [], action["timestamp"], metadata)
            current_source = source
            messages.append(current)
        assert current is not None
        _add_action(current, action)
    result = linear_thread(messages, title=thread["title"])
    thread_metadata: dict[str, Any] = copy.deepcopy(thread.get("metadata") or {})
    if annotations:
        thread_metadata["annotations"] = annotations
    result.metadata = thread_metadata
    result.agents = copy.deepcopy(thread["agents"])
    result.id = thread["thread_id"]
    result.parent_thread_id = thread.get("parent_thread_id")
    result.created_at = thread["created_at"]
    result.updated_at = thread["updated_at"]
    return result


def _role_of(action: dict[str, Any]) -> tuple[str, str | None]:
    action_type = action["action_type"]
    if action_type == "user_message":
        return "user", None
    if action_type == "system.prompt":
        return "system", None
    if action_type == "tool_return":
        return "tool", None
    return "assistant", action["agent_id"]


def _add_action(message: dict[str, Any], action: dict[str, Any]) -> None:
    action_type = action["action_type"]
    parts = message["parts"]
    metadata = message["metadata"]
    if action_type == "system.prompt":
        data = action["data"]
        content = data.get("content") if isinstance(data, dict) else data
        parts.extend(_system_parts(content))
    elif action_type in ("user_message", "assistant_message"):
        parts.extend(part for part in _read_parts(action["content"]) if part.get("text") != "")
        for attachment in action.get("attachments", []):
            url = attachment.get("url")
            if not isinstance(url, str):
                url = f"data:{attachment['media_type']};base64,{attachment['data']}"
            parts.append(file_part(attachment["media_type"], url, attachment["name"]))
        if "finish_reason" in action and action["finish_reason"] is not None:
            metadata["finishReason"] = action["finish_reason"]
        usage = action.get("usage")
        if isinstance(usage, dict):
            metadata["usage"] = {
                "inputTokens": usage["input_tokens"],
                "outputTokens": usage["output_tokens"],
                "totalTokens": usage.get(
                    "total_tokens", usage["input_tokens"] + usage["output_tokens"]
                ),
            }
    elif action_type == "thinking":
        part = {"type": "reasoning", "text": action.get("content") or ""}
        if isinstance(action.get("signature"), str):
            part["signature"] = action["signature"]
        parts.append(part)
        metadata.setdefault("extra", {}).setdefault("threadprotocol", {})["provider_name"] = action[
            "provider_name"
        ]
    elif action_type == "tool_call":
        args = copy.deepcopy(action["args"])
        parts.append(tool_call_part(action["tool_call_id"], action["tool_name"], args))
    elif action_type == "tool_return":
        output = copy.deepcopy(action["content"])
        is_error = action["status"] != "success"
        call_id, name = action["tool_call_id"], action["tool_name"]
        parts.append(tool_result_part(call_id, name, output, is_error=is_error))
        if action["status"] == "validation_error":
            metadata.setdefault("extra", {}).setdefault("threadprotocol", {})["status"] = (
                "validation_error"
            )
