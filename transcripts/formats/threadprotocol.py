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
path is written as a `system.orphan_tool_return` action.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from typing import Any

from .checks import Problems, is_int
from .document import (
    TreeThread,
    active_path,
    leaves,
    linear_thread,
    make_message,
    parse_iso,
    path_to,
)

VERSION = "1.0.0"
CORE_ACTIONS = ("user_message", "assistant_message", "thinking", "tool_call", "tool_return")
FINISH_REASONS = ("stop", "tool_call", "length", "content_filter")
STATUSES = ("success", "error", "validation_error")
CONTENT_TYPES = ("text", "image", "file", "audio", "video")
DEFAULT_AGENT = "assistant"
EPOCH = "1970-01-01T00:00:00Z"
_SYSTEM_ACTION = re.compile(r"^system\.[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
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
        if isinstance(action_type, str) and _SYSTEM_ACTION.match(action_type):
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


def validate_thread(value: Any, path: str, problems: Problems) -> None:
    """Record every violation of the ThreadProtocol v1.0.0 rules in one thread."""
    thread = problems.obj(value, path)
    if thread is None:
        return
    if thread.get("version") != VERSION:
        problems.add(f"{path}.version", f"expected {VERSION!r}")
    problems.req_string(thread, "thread_id", path)
    problems.opt_string(thread.get("parent_thread_id"), f"{path}.parent_thread_id")
    for key in ("created_at", "updated_at"):
        _timestamp(thread, key, path, problems)
    problems.req_string(thread, "title", path)
    if thread.get("metadata") is not None:
        problems.obj(thread["metadata"], f"{path}.metadata")
    agents = problems.obj(problems.required(thread, "agents", path), f"{path}.agents") or {}
    identifiers: dict[str, str] = {}
    for key, config_value in agents.items():
        apath = f"{path}.agents.{key}"
        config = problems.obj(config_value, apath)
        if config is None:
            continue
        agent_id = problems.req_string(config, "agent_id", apath)
        if agent_id is not None and agent_id != key:
            problems.add(f"{apath}.agent_id", "must equal its key in the agents registry")
        identifier = problems.req_string(config, "agent_identifier", apath)
        if identifier is not None and identifier in identifiers:
            problems.add(
                f"{apath}.agent_identifier", f"not unique: also used by {identifiers[identifier]}"
            )
        elif identifier is not None:
            identifiers[identifier] = key
        problems.req_string(config, "agent_name", apath)
        _timestamp(config, "created_at", apath, problems)
        problems.opt_string(config.get("config_ref"), f"{apath}.config_ref")
    actions = problems.array(problems.required(thread, "actions", path), f"{path}.actions") or []
    _validate_actions(actions, f"{path}.actions", problems, set(agents))


def _timestamp(data: dict[str, Any], key: str, path: str, problems: Problems) -> Any:
    text = problems.req_string(data, key, path)
    if text is None:
        return None
    moment = parse_iso(text)
    if moment is None:
        problems.add(f"{path}.{key}", "expected an ISO 8601 timestamp")
    return moment


def _validate_actions(actions: list[Any], path: str, problems: Problems, agents: set[str]) -> None:
    seen_sequences: dict[int, int] = {}
    calls: dict[str, str] = {}
    first: int | None = None
    previous_time: Any = None
    for index, value in enumerate(actions):
        apath = f"{path}[{index}]"
        action = problems.obj(value, apath)
        if action is None:
            continue
        sequence = problems.required(action, "sequence", apath)
        if sequence is not None and not is_int(sequence):
            problems.add(f"{apath}.sequence", "expected an integer")
        elif is_int(sequence):
            first = sequence if first is None else first
            if sequence in seen_sequences:
                problems.add(
                    f"{apath}.sequence",
                    f"duplicate sequence {sequence} (also at {path}[{seen_sequences[sequence]}])",
                )
            elif sequence != first + index:
                problems.add(
                    f"{apath}.sequence", f"expected sequence {first + index}, got {sequence}"
                )
            seen_sequences.setdefault(sequence, index)
        moment = _timestamp(action, "timestamp", apath, problems)
        if moment is not None:
            if previous_time is not None and moment < previous_time:
                problems.add(f"{apath}.timestamp", "earlier than the action before it in sequence")
            previous_time = moment
        problems.opt_string(action.get("action_id"), f"{apath}.action_id")
        action_type = problems.req_string(action, "action_type", apath)
        if action_type is None:
            continue
        if action_type.startswith("system."):
            if not _SYSTEM_ACTION.match(action_type):
                problems.add(f"{apath}.action_type", "system action names are system.<name>")
            if "data" not in action:
                problems.add(f"{apath}.data", "required field is missing")
            data = action.get("data")
            if isinstance(data, dict) and isinstance(data.get("agent_id"), str):
                _agent(data["agent_id"], f"{apath}.data.agent_id", problems, agents)
            continue
        if action_type not in CORE_ACTIONS:
            problems.add(
                f"{apath}.action_type",
                f"unknown action type {action_type!r}: core actions are "
                f"{', '.join(CORE_ACTIONS)}; extensions are named system.<name>",
            )
            continue
        _validate_core(action, action_type, apath, problems, agents, calls)


def _agent(value: Any, path: str, problems: Problems, agents: set[str]) -> None:
    if problems.string(value, path) is not None and value not in agents:
        problems.add(path, f"agent {value!r} is not in the agents registry")


def _validate_core(
    action: dict[str, Any],
    action_type: str,
    path: str,
    problems: Problems,
    agents: set[str],
    calls: dict[str, str],
) -> None:
    if action_type in ("assistant_message", "thinking", "tool_call"):
        _agent(problems.required(action, "agent_id", path), f"{path}.agent_id", problems, agents)
    if action_type in ("user_message", "assistant_message"):
        if "content" in action:
            _validate_content(action["content"], f"{path}.content", problems)
        else:
            problems.add(f"{path}.content", "required field is missing")
    if action_type == "user_message" and "attachments" in action:
        for index, item in enumerate(
            problems.array(action["attachments"], f"{path}.attachments") or []
        ):
            ipath = f"{path}.attachments[{index}]"
            attachment = problems.obj(item, ipath)
            if attachment is not None:
                problems.req_string(attachment, "name", ipath)
                problems.req_string(attachment, "media_type", ipath)
                if not isinstance(attachment.get("url"), str) and not isinstance(
                    attachment.get("data"), str
                ):
                    problems.add(ipath, "an attachment needs url or data")
    if action_type == "assistant_message":
        finish = action.get("finish_reason")
        if finish is not None and finish not in FINISH_REASONS:
            problems.add(f"{path}.finish_reason", f"expected one of {', '.join(FINISH_REASONS)}")
        if "usage" in action:
            usage = problems.obj(action["usage"], f"{path}.usage")
            if usage is not None:
                for key in ("input_tokens", "output_tokens"):
                    if not is_int(usage.get(key)):
                        problems.add(f"{path}.usage.{key}", "expected an integer")
                if "total_tokens" in usage and not is_int(usage["total_tokens"]):
                    problems.add(f"{path}.usage.total_tokens", "expected an integer")
    elif action_type == "thinking":
        problems.opt_string(action.get("content"), f"{path}.content")
        problems.opt_string(action.get("signature"), f"{path}.signature")
        problems.req_string(action, "provider_name", path)
        problems.opt_string(action.get("thinking_id"), f"{path}.thinking_id")
    elif action_type == "tool_call":
        name = problems.req_string(action, "tool_name", path)
        call_id = problems.req_string(action, "tool_call_id", path)
        problems.required(action, "args", path)
        if call_id is not None and call_id in calls:
            problems.add(f"{path}.tool_call_id", f"duplicate tool_call_id {call_id!r}")
        elif call_id is not None and name is not None:
            calls[call_id] = name
    elif action_type == "tool_return":
        name = problems.req_string(action, "tool_name", path)
        call_id = problems.req_string(action, "tool_call_id", path)
        if action.get("status") not in STATUSES:
            problems.add(f"{path}.status", f"expected one of {', '.join(STATUSES)}")
        problems.required(action, "content", path)
        if call_id is not None and call_id not in calls:
            problems.add(f"{path}.tool_call_id", f"no earlier tool_call has id {call_id!r}")
        elif call_id is not None and name is not None and calls[call_id] != name:
            problems.add(f"{path}.tool_name", f"the call {call_id!r} was to {calls[call_id]!r}")


def _validate_content(value: Any, path: str, problems: Problems) -> None:
    if isinstance(value, str) or value is None:
        if value is None:
            problems.add(path, "expected a string or an array of content parts")
        return
    for index, item in enumerate(problems.array(value, path) or []):
        ipath = f"{path}[{index}]"
        part = problems.obj(item, ipath)
        if part is None:
            continue
        if part.get("type") not in CONTENT_TYPES:
            problems.add(f"{ipath}.type", f"expected one of {', '.join(CONTENT_TYPES)}")
        elif part["type"] == "text":
            problems.req_string(part, "text", ipath)


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
        part = {"type": "file", "mimeType": mime, "url": url}
        if isinstance(item.get("name"), str):
            part["name"] = item["name"]
        parts.append(part)
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
            parts.append(
                {
                    "type": "file",
                    "mimeType": attachment["media_type"],
                    "url": url,
                    "name": attachment["name"],
                }
            )
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
        parts.append(
            {
                "type": "tool-call",
                "toolCallId": action["tool_call_id"],
                "toolName": action["tool_name"],
                "input": copy.deepcopy(action["args"]),
            }
        )
    elif action_type == "tool_return":
        parts.append(
            {
                "type": "tool-result",
                "toolCallId": action["tool_call_id"],
                "toolName": action["tool_name"],
                "output": copy.deepcopy(action["content"]),
                "isError": action["status"] != "success",
            }
        )
        if action["status"] == "validation_error":
            metadata.setdefault("extra", {}).setdefault("threadprotocol", {})["status"] = (
                "validation_error"
            )
