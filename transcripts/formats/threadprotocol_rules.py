"""ThreadProtocol v1.0.0's vocabulary and validation rules, each problem at its JSON path."""

from __future__ import annotations

import re
from datetime import datetime

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
)
from transcripts.times import parse_iso

from .validation import Problems, is_int

VERSION = "1.0.0"
CORE_ACTIONS = ("user_message", "assistant_message", "thinking", "tool_call", "tool_return")
FINISH_REASONS = ("stop", "tool_call", "length", "content_filter")
STATUSES = ("success", "error", "validation_error")
CONTENT_TYPES = ("text", "image", "file", "audio", "video")
SYSTEM_ACTION = re.compile(r"^system\.[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def validate_thread(value: JsonValue, path: str, problems: Problems) -> None:
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


def _timestamp(data: JsonObject, key: str, path: str, problems: Problems) -> datetime | None:
    text = problems.req_string(data, key, path)
    if text is None:
        return None
    moment = parse_iso(text)
    if moment is None:
        problems.add(f"{path}.{key}", "expected an ISO 8601 timestamp")
    return moment


def _validate_actions(actions: JsonArray, path: str, problems: Problems, agents: set[str]) -> None:
    seen_sequences: dict[int, int] = {}
    calls: dict[str, str] = {}
    first: int | None = None
    previous_time: datetime | None = None
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
            if not SYSTEM_ACTION.match(action_type):
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


def _agent(value: JsonValue, path: str, problems: Problems, agents: set[str]) -> None:
    if problems.string(value, path) is not None and value not in agents:
        problems.add(path, f"agent {value!r} is not in the agents registry")


def _validate_core(
    action: JsonObject,
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
        apath = f"{path}.attachments"
        attachments = problems.array(action["attachments"], apath) or []
        for ipath, attachment in problems.objects(attachments, apath):
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
        name = _name(action, "tool_name", path, problems)
        call_id = _name(action, "tool_call_id", path, problems)
        problems.required(action, "args", path)
        if call_id is not None and call_id in calls:
            problems.add(f"{path}.tool_call_id", f"duplicate tool_call_id {call_id!r}")
        elif call_id is not None and name is not None:
            calls[call_id] = name
    elif action_type == "tool_return":
        name = _name(action, "tool_name", path, problems)
        call_id = _name(action, "tool_call_id", path, problems)
        if action.get("status") not in STATUSES:
            problems.add(f"{path}.status", f"expected one of {', '.join(STATUSES)}")
        problems.required(action, "content", path)
        if call_id is not None and call_id not in calls:
            problems.add(f"{path}.tool_call_id", f"no earlier tool_call has id {call_id!r}")
        elif call_id is not None and name is not None and calls[call_id] != name:
            problems.add(f"{path}.tool_name", f"the call {call_id!r} was to {calls[call_id]!r}")


def _name(action: JsonObject, key: str, path: str, problems: Problems) -> str | None:
    """A tool name or call id: a string, and (as every stored tool call has one) not empty."""
    value = problems.req_string(action, key, path)
    if value == "":
        problems.add(f"{path}.{key}", "must not be empty")
        return None
    return value


def _validate_content(value: JsonValue, path: str, problems: Problems) -> None:
    if isinstance(value, str) or value is None:
        if value is None:
            problems.add(path, "expected a string or an array of content parts")
        return
    for ipath, part in problems.objects(problems.array(value, path) or [], path):
        if part.get("type") not in CONTENT_TYPES:
            problems.add(f"{ipath}.type", f"expected one of {', '.join(CONTENT_TYPES)}")
        elif part["type"] == "text":
            problems.req_string(part, "text", ipath)
